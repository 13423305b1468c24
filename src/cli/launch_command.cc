#include "cli/launch_command.h"

#include <pthread.h>
#include <signal.h>

#include <memory>
#include <string>
#include <vector>

#include "cli/observability_flags.h"
#include "http/client/http_client.h"
#include "router/core_split.h"
#include "router/replica_router.h"
#include "util/child_process.h"
#include "util/core_set.h"
#include "util/cpu_topology.h"
#include "util/error.h"
#include "util/log.h"

namespace kiln {
namespace {

struct LaunchOptions {
  std::string model_id;
  int replicas = 0;  // 0: one per --core-sets item, else 1
  int cores_per_replica = 0;
  std::string core_sets;
  std::string hostname = "127.0.0.1";
  int port = 3000;
  int io_threads = 2;
  double health_interval = 1.0;
  double health_timeout = 1.0;
  double restart_unhealthy_after = 30.0;
  double startup_timeout = 300.0;
  double queue_timeout = 30.0;
  int max_retries = 2;
  int64_t router_queue = 64;
  bool prefix_affinity = false;
  int prefix_affinity_chars = 512;
  int prefix_affinity_slack = 8;
  // Used by the router and passed on to every replica.
  std::string api_key;
  int64_t payload_limit = 2'000'000;
  double keep_alive_interval = 15.0;
  double graceful_termination_timeout = 90.0;
  ObservabilityOptions observability;
};

Millis ToMillis(double seconds, const char* flag) {
  KILN_CHECK(seconds > 0, flag, " must be > 0");
  return Millis(static_cast<int64_t>(seconds * 1000.0));
}

CoreSets ResolveCoreSets(const LaunchOptions& o) {
  const std::vector<int> allowed = AllowedCores();
  if (!o.core_sets.empty()) {
    KILN_CHECK(o.cores_per_replica == 0, "give --core-sets or --cores-per-replica, not both");
    CoreSets sets = ParseCoreSets(o.core_sets);
    KILN_CHECK(o.replicas == 0 || static_cast<size_t>(o.replicas) == sets.size(), "--replicas ",
               o.replicas, " but --core-sets lists ", sets.size(), " sets");
    CheckCoreSets(sets, allowed);
    return sets;
  }
  return SplitCores(ReadCpuTopology(allowed), o.replicas == 0 ? 1 : o.replicas,
                    o.cores_per_replica);
}

// The flags every replica's `kiln serve` gets: the model, the router-shared ones the user set,
// and every flag `kiln launch` does not know itself.
std::vector<std::string> ServeArgs(const CLI::App& cmd, const LaunchOptions& o) {
  std::vector<std::string> args;
  if (!o.model_id.empty()) args.insert(args.end(), {"--model-id", o.model_id});
  if (!o.api_key.empty()) args.insert(args.end(), {"--api-key", o.api_key});
  if (cmd.count("--payload-limit") > 0) {
    args.insert(args.end(), {"--payload-limit", std::to_string(o.payload_limit)});
  }
  if (cmd.count("--keep-alive-interval") > 0) {
    args.insert(args.end(), {"--keep-alive-interval", std::to_string(o.keep_alive_interval)});
  }
  if (cmd.count("--graceful-termination-timeout") > 0) {
    args.insert(args.end(),
                {"--graceful-termination-timeout", std::to_string(o.graceful_termination_timeout)});
  }
  const ObservabilityOptions& obs = o.observability;
  if (obs.json_output) args.emplace_back("--json-output");
  if (!obs.otlp_endpoint.empty()) {
    args.insert(args.end(), {"--otlp-endpoint", obs.otlp_endpoint, "--otlp-service-name",
                             obs.otlp_service_name});
  }
  if (obs.log_prompts) args.emplace_back("--log-prompts");
  for (const std::string& extra : cmd.remaining()) {
    KILN_CHECK(extra != "--cores" && extra.rfind("--cores=", 0) != 0,
               "kiln launch places the replicas itself: use --core-sets or --cores-per-replica, "
               "not --cores");
    args.push_back(extra);
  }
  return args;
}

LaunchConfig MakeLaunchConfig(const CLI::App& cmd, const LaunchOptions& o) {
  KILN_CHECK(o.port >= 0 && o.port <= 65535, "--port must be in 0..65535");
  KILN_CHECK(o.replicas >= 0, "--replicas must be >= 1");
  KILN_CHECK(o.router_queue >= 0, "--router-queue must be >= 0");
  KILN_CHECK(o.max_retries >= 0, "--max-retries must be >= 0");
  LaunchConfig c;
  c.exe = SelfExecutable();
  c.core_sets = ResolveCoreSets(o);
  c.serve_args = ServeArgs(cmd, o);
  c.http.host = o.hostname;
  c.http.port = static_cast<uint16_t>(o.port);
  c.http.io_threads = o.io_threads;
  c.http.max_body_bytes = static_cast<size_t>(o.payload_limit);
  c.http.sse_keep_alive = ToMillis(o.keep_alive_interval, "--keep-alive-interval");
  c.api_key = o.api_key;
  c.health_interval = ToMillis(o.health_interval, "--health-interval");
  c.health_timeout = ToMillis(o.health_timeout, "--health-timeout");
  c.restart_unhealthy_after = ToMillis(o.restart_unhealthy_after, "--restart-unhealthy-after");
  c.startup_timeout = ToMillis(o.startup_timeout, "--startup-timeout");
  c.queue_timeout = ToMillis(o.queue_timeout, "--router-queue-timeout");
  c.drain_timeout = ToMillis(o.graceful_termination_timeout, "--graceful-termination-timeout");
  c.max_retries = o.max_retries;
  c.router_queue = o.router_queue;
  c.prefix_affinity = o.prefix_affinity;
  c.prefix_affinity_chars = static_cast<size_t>(std::max(1, o.prefix_affinity_chars));
  c.prefix_affinity_slack = o.prefix_affinity_slack;
  c.otlp_endpoint = o.observability.otlp_endpoint;
  c.otlp_service_name = o.observability.otlp_service_name;
  return c;
}

// True when SIGINT or SIGTERM is pending (they are blocked: see RunLaunch).
bool SignalPending(const sigset_t& signals) {
  timespec zero{0, 0};
  return sigtimedwait(&signals, nullptr, &zero) > 0;
}

void RunLaunch(const CLI::App& cmd, const LaunchOptions& o) {
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);  // every thread started after inherits it
  ApplyLogFlags(o.observability);
  http::RaiseOpenFileLimit();
  LaunchConfig config = MakeLaunchConfig(cmd, o);
  std::string sets;
  for (const auto& s : config.core_sets) sets += (sets.empty() ? "" : " ") + FormatCoreSet(s);
  log::Info(StrCat("launching ", config.core_sets.size(), " replicas on core sets ", sets));
  ReplicaRouter router(config);
  if (!router.Start([&signals] { return SignalPending(signals); })) {
    log::Info("signal received while the replicas were starting: stopped");
    return;
  }
  log::Info(StrCat("routing to ", config.core_sets.size(), " replicas on http://", config.http.host,
                   ":", router.port()));
  int sig = 0;
  sigwait(&signals, &sig);
  log::Info(StrCat("received signal ", sig, ": draining (up to ",
                   config.drain_timeout.count() / 1000, " s), then stopping the replicas"));
  router.Drain([&signals] { return SignalPending(signals); });
  router.Stop();
  log::Info("stopped");
}

void AddLaunchFlags(CLI::App* cmd, LaunchOptions& o) {
  cmd->add_option("--model-id", o.model_id, "Model every replica serves (as kiln serve)");
  cmd->add_option("--replicas", o.replicas,
                  "Replicas to run (default: one per --core-sets item, else 1)")
      ->envname("KILN_REPLICAS");
  cmd->add_option("--cores-per-replica", o.cores_per_replica,
                  "CPUs per replica, whole physical cores (default: an equal share of the CPUs "
                  "this process may use)");
  cmd->add_option("--core-sets", o.core_sets,
                  "Each replica's CPUs: 0-1,2-3 (one set per item) or 0-1,8-9;2-3,10-11");
  cmd->add_option("--hostname", o.hostname, "Address the router listens on")->capture_default_str();
  cmd->add_option("--port", o.port, "Port the router listens on")
      ->envname("PORT")
      ->capture_default_str();
  cmd->add_option("--io-threads", o.io_threads, "Router HTTP I/O threads")->capture_default_str();
  cmd->add_option("--health-interval", o.health_interval, "Seconds between health probes")
      ->capture_default_str();
  cmd->add_option("--health-timeout", o.health_timeout,
                  "Seconds a probe may take; a replica that misses one leaves the rotation")
      ->capture_default_str();
  cmd->add_option("--restart-unhealthy-after", o.restart_unhealthy_after,
                  "Seconds out of rotation after which a hung replica is killed and restarted")
      ->capture_default_str();
  cmd->add_option("--startup-timeout", o.startup_timeout, "Seconds a replica may take to load")
      ->capture_default_str();
  cmd->add_option("--router-queue", o.router_queue,
                  "Requests the router holds when every replica is full, before 429")
      ->capture_default_str();
  cmd->add_option("--router-queue-timeout", o.queue_timeout,
                  "Seconds a held request waits for a replica before 503")
      ->capture_default_str();
  cmd->add_option("--max-retries", o.max_retries,
                  "Re-dispatches of a request whose replica failed before its first byte")
      ->capture_default_str();
  cmd->add_flag("--prefix-affinity", o.prefix_affinity,
                "Send prompts that start alike to the same replica (its prefix cache)");
  cmd->add_option("--prefix-affinity-chars", o.prefix_affinity_chars,
                  "Prompt bytes that make the affinity key")
      ->capture_default_str();
  cmd->add_option("--prefix-affinity-slack", o.prefix_affinity_slack,
                  "Requests more than the least loaded replica before affinity gives way")
      ->capture_default_str();
  cmd->add_option("--api-key", o.api_key,
                  "As kiln serve; also guards the router's /info, /metrics, /v1/status")
      ->envname("API_KEY");
  cmd->add_option("--payload-limit", o.payload_limit, "As kiln serve (the router enforces it too)")
      ->envname("PAYLOAD_LIMIT")
      ->capture_default_str();
  cmd->add_option("--keep-alive-interval", o.keep_alive_interval, "As kiln serve")
      ->envname("KEEP_ALIVE_INTERVAL")
      ->capture_default_str();
  cmd->add_option("-g,--graceful-termination-timeout", o.graceful_termination_timeout,
                  "Seconds requests in flight get after SIGTERM, then as long for the replicas")
      ->envname("GRACEFUL_TERMINATION_TIMEOUT")
      ->capture_default_str();
  // The router's own lines and spans; passed on to every replica.
  AddObservabilityFlags(cmd, o.observability);
}

}  // namespace

void AddLaunchCommand(CLI::App& app) {
  auto opt = std::make_shared<LaunchOptions>();
  CLI::App* cmd = app.add_subcommand(
      "launch",
      "Run N kiln serve replicas, each pinned to its own cores, behind one endpoint with the "
      "same API: least-outstanding balancing, health checks, restarts, retries. Every flag not "
      "listed here goes to each replica's kiln serve (see kiln serve --help)");
  cmd->allow_extras();
  AddLaunchFlags(cmd, *opt);
  cmd->callback([cmd, opt] { RunLaunch(*cmd, *opt); });
}

}  // namespace kiln
