#include "router/supervisor.h"

#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "util/core_set.h"
#include "util/error.h"
#include "util/log.h"

namespace kiln {
namespace {

constexpr std::chrono::milliseconds kStartingProbeInterval{200};
// A replica ready this long has its restart backoff reset: a crash after that is not a loop.
constexpr std::chrono::seconds kStableAfter{60};

// A loopback port nobody listens on now (the replica binds it a moment later; if another
// process took it meanwhile, that replica exits and is restarted on another).
uint16_t FreeLoopbackPort() {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  KILN_CHECK(fd >= 0, "socket() failed");
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof(addr);
  const bool ok = bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
                  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0;
  close(fd);
  KILN_CHECK(ok, "no free loopback port for a replica");
  return ntohs(addr.sin_port);
}

// The value of the unlabelled sample `name` in Prometheus text, or 0.
int64_t Sample(const std::string& text, const std::string& name) {
  const std::string key = "\n" + name + " ";
  const size_t at = ("\n" + text).find(key);
  if (at == std::string::npos) return 0;
  return static_cast<int64_t>(std::strtod(text.c_str() + at + key.size() - 1, nullptr));
}

}  // namespace

const char* ReplicaStateName(ReplicaState s) {
  switch (s) {
    case ReplicaState::kStarting:
      return "starting";
    case ReplicaState::kReady:
      return "ready";
    case ReplicaState::kUnhealthy:
      return "unhealthy";
    case ReplicaState::kDead:
      return "restarting";
    case ReplicaState::kStopped:
      return "stopped";
  }
  return "unknown";
}

Supervisor::Supervisor(boost::asio::io_context& loop, const LaunchConfig& config, Hooks hooks)
    : loop_(loop), config_(config), hooks_(std::move(hooks)) {
  replicas_.resize(config.core_sets.size());
  for (size_t i = 0; i < replicas_.size(); ++i) {
    replicas_[i].index = static_cast<int>(i);
    replicas_[i].cores = config.core_sets[i];
  }
}

Supervisor::~Supervisor() {
  KillAll();
  // Their pending answers run now and find no process (Get ignores them).
  for (Replica& r : replicas_) {
    r.probe.reset();
    r.proxy.reset();
  }
}

void Supervisor::StartAll() {
  const Clock::time_point now = Clock::now();
  for (Replica& r : replicas_) Spawn(r, now);
}

void Supervisor::Spawn(Replica& r, Clock::time_point now) {
  r.port = FreeLoopbackPort();
  ChildSpec spec;
  spec.exe = config_.exe;
  spec.args = {"serve",   "--hostname",          "127.0.0.1", "--port", std::to_string(r.port),
               "--cores", FormatCoreSet(r.cores)};
  spec.args.insert(spec.args.end(), config_.serve_args.begin(), config_.serve_args.end());
  spec.cpus = r.cores;
  spec.log_prefix = StrCat("[replica ", r.index, "] ");
  spec.json_fields = StrCat("\"replica\":", r.index);
  r.process = std::make_unique<ChildProcess>(spec);
  ++r.generation;
  const http::Url url{"127.0.0.1", r.port, "/"};
  http::ClientOptions proxy_options;
  proxy_options.connect_timeout = std::chrono::milliseconds(2000);
  // A request without "stream" gets no byte until its whole generation is done, which can take
  // many minutes on a CPU: a hung replica is found by the probes and killed, not by this.
  proxy_options.idle_timeout = std::chrono::hours(24);
  proxy_options.user_agent = "kiln-launch";
  proxy_options.read_buffer_bytes = 16 * 1024;
  r.proxy = std::make_shared<http::HttpClient>(loop_, url, proxy_options);
  http::ClientOptions probe_options;
  probe_options.connect_timeout = config_.health_timeout;
  probe_options.idle_timeout = config_.health_timeout;
  probe_options.user_agent = "kiln-launch-probe";
  r.probe = std::make_shared<http::HttpClient>(loop_, url, probe_options);
  r.state = ReplicaState::kStarting;
  r.started_at = now;
  r.next_probe = now + kStartingProbeInterval;
  r.probe_in_flight = false;
  r.failed_probes = 0;
  r.outstanding = 0;
  r.reported = 0;
  log::Info(StrCat("replica ", r.index, ": started pid ", r.process->pid(), " on cores ",
                   FormatCoreSet(r.cores), ", port ", r.port));
}

void Supervisor::Tick(Clock::time_point now) {
  for (Replica& r : replicas_) {
    CheckExit(r, now);
    if (stopping_) continue;  // draining replicas answer 503: that is not a failure
    switch (r.state) {
      case ReplicaState::kDead:
        if (startup_failure_.empty() && now >= r.restart_at) Spawn(r, now);
        break;
      case ReplicaState::kStarting:
        if (now - r.started_at > config_.startup_timeout) {
          log::Error(StrCat("replica ", r.index, ": not ready after ",
                            config_.startup_timeout.count() / 1000, " s; killing it"));
          r.process->Signal(SIGKILL);
        }
        [[fallthrough]];
      case ReplicaState::kReady:
        if (!r.probe_in_flight && now >= r.next_probe) Probe(r);
        break;
      case ReplicaState::kUnhealthy:
        if (now - r.unhealthy_since > config_.restart_unhealthy_after) {
          log::Error(StrCat("replica ", r.index, ": unhealthy for ",
                            config_.restart_unhealthy_after.count() / 1000, " s; killing it"));
          r.process->Signal(SIGKILL);
        } else if (!r.probe_in_flight && now >= r.next_probe) {
          Probe(r);
        }
        break;
      case ReplicaState::kStopped:
        break;
    }
  }
}

void Supervisor::CheckExit(Replica& r, Clock::time_point now) {
  if (!r.process) return;
  const std::optional<int> status = r.process->PollExit();
  if (!status) return;
  const bool was_available = r.available();
  r.last_exit = DescribeWaitStatus(*status);
  const std::string tail = r.process->Tail();
  r.process.reset();
  if (stopping_) {
    r.state = ReplicaState::kStopped;
    log::Info(StrCat("replica ", r.index, ": ", r.last_exit));
    return;
  }
  r.state = ReplicaState::kDead;
  if (was_available && hooks_.on_unavailable) hooks_.on_unavailable(r);
  if (!all_started_ && !r.ever_ready) {
    startup_failure_ = StrCat("replica ", r.index, " (cores ", FormatCoreSet(r.cores), ") ",
                              r.last_exit, " before it was ready; its last output:\n", tail);
    return;
  }
  if (r.ever_ready && now - r.ready_since > kStableAfter) r.backoff = std::chrono::milliseconds(0);
  r.backoff = r.backoff.count() == 0 ? config_.restart_backoff_min
                                     : std::min(config_.restart_backoff_max, r.backoff * 2);
  r.restart_at = now + r.backoff;
  ++r.restarts;
  log::Error(
      StrCat("replica ", r.index, ": ", r.last_exit, "; restarting in ", r.backoff.count(), " ms"));
}

void Supervisor::Suspect(Replica& r) {
  if (r.state == ReplicaState::kReady) r.next_probe = Clock::now();
}

void FetchText(http::HttpClient& client, const std::string& target, const std::string& api_key,
               std::function<void(int status, std::string body)> done) {
  auto body = std::make_shared<std::string>();
  http::StreamCallbacks cb;
  cb.on_body = [body](std::string_view bytes, http::Clock::time_point) { body->append(bytes); };
  cb.on_end = [body, done = std::move(done)](const http::StreamOutcome& o) {
    done(o.end == http::StreamEnd::kComplete ? o.status : 0, std::move(*body));
  };
  http::ClientRequest request;
  request.method = "GET";
  request.target = target;
  if (!api_key.empty()) request.headers.emplace_back("Authorization", "Bearer " + api_key);
  client.Start(std::move(request), std::move(cb));
}

void Supervisor::Get(Replica& r, const std::string& target,
                     std::function<void(Replica&, int, std::string)> done) {
  const uint64_t generation = r.generation;
  const int index = r.index;
  FetchText(*r.probe, target, config_.api_key,
            [this, generation, index, done](int status, std::string body) {
              Replica& r = replicas_[static_cast<size_t>(index)];
              if (r.generation != generation || !r.process)
                return;  // an answer of an older process
              done(r, status, std::move(body));
            });
}

void Supervisor::Probe(Replica& r) {
  r.probe_in_flight = true;
  Get(r, "/health", [this](Replica& r, int status, std::string) { OnProbe(r, status); });
}

void Supervisor::OnProbe(Replica& r, int status) {
  r.probe_in_flight = false;
  const Clock::time_point now = Clock::now();
  if (status == 200) {
    r.failed_probes = 0;
    r.next_probe = now + config_.health_interval;
    if (r.state == ReplicaState::kReady) return FetchLoad(r);
    if (r.state == ReplicaState::kStarting || r.state == ReplicaState::kUnhealthy) {
      Get(r, "/info", [this](Replica& r, int status, std::string body) {
        if (status != 200 || r.state == ReplicaState::kReady) return;
        const nlohmann::json info = nlohmann::json::parse(body, nullptr, false);
        if (info.is_object()) {
          r.capacity = info.value("max_concurrent_requests", int64_t{0}) +
                       info.value("max_queue", int64_t{0});
        }
        r.info = std::move(body);
        MarkReady(r);
      });
    }
    return;
  }
  ++r.failed_probes;
  if (r.state == ReplicaState::kStarting) {
    r.next_probe = now + kStartingProbeInterval;
    return;
  }
  r.next_probe = now + config_.health_interval;
  if (r.state == ReplicaState::kReady) {
    MarkUnhealthy(
        r, status == 0 ? "health probe failed or timed out" : StrCat("/health answered ", status));
  }
}

void Supervisor::MarkReady(Replica& r) {
  const Clock::time_point now = Clock::now();
  const bool first = !r.ever_ready;
  r.state = ReplicaState::kReady;
  r.ever_ready = true;
  r.ready_since = now;
  r.next_probe = now + config_.health_interval;
  all_started_ = std::all_of(replicas_.begin(), replicas_.end(),
                             [](const Replica& x) { return x.ever_ready; });
  log::Info(
      StrCat("replica ", r.index, ": ready on port ", r.port, " after ",
             std::chrono::duration_cast<std::chrono::milliseconds>(now - r.started_at).count(),
             " ms", first ? "" : " (back in rotation)"));
  if (hooks_.on_available) hooks_.on_available(r);
}

void Supervisor::MarkUnhealthy(Replica& r, const std::string& why) {
  r.state = ReplicaState::kUnhealthy;
  r.unhealthy_since = Clock::now();
  log::Warn(StrCat("replica ", r.index, ": out of rotation (", why, ")"));
  if (hooks_.on_unavailable) hooks_.on_unavailable(r);
}

void Supervisor::FetchLoad(Replica& r) {
  Get(r, "/metrics", [](Replica& r, int status, std::string body) {
    if (status != 200) return;
    r.reported = Sample(body, "kiln_requests_running") + Sample(body, "kiln_requests_waiting");
  });
}

void Supervisor::BeginStop() {
  stopping_ = true;
  for (Replica& r : replicas_) {
    if (r.process) {
      r.process->Signal(SIGTERM);
    } else {
      r.state = ReplicaState::kStopped;
    }
  }
}

void Supervisor::KillAll() {
  for (Replica& r : replicas_) r.process.reset();  // SIGKILL and reap
}

bool Supervisor::AllExited() {
  const Clock::time_point now = Clock::now();
  for (Replica& r : replicas_) CheckExit(r, now);
  return std::none_of(replicas_.begin(), replicas_.end(),
                      [](const Replica& r) { return r.process != nullptr; });
}

}  // namespace kiln
