#include "router/replica_router.h"

#include <boost/asio/post.hpp>
#include <future>
#include <nlohmann/json.hpp>

#include "api/api_error.h"
#include "util/metrics_merge.h"
#include "router/prefix_key.h"
#include "telemetry/exporter_metrics.h"
#include "util/bearer_token.h"
#include "util/core_set.h"
#include "util/error.h"
#include "util/log.h"

namespace kiln {
namespace {

constexpr std::chrono::milliseconds kTick{100};

void RespondJson(const std::shared_ptr<http::Exchange>& exchange, int status, std::string body) {
  http::Response response;
  response.status = status;
  response.body = std::move(body);
  exchange->Respond(std::move(response));
}

}  // namespace

template <typename F>
auto ReplicaRouter::OnLoop(F fn) {
  std::packaged_task<decltype(fn())()> task(std::move(fn));
  auto result = task.get_future();
  boost::asio::post(loop_, [&task] { task(); });
  return result.get();
}

ReplicaRouter::ReplicaRouter(LaunchConfig config)
    : config_(std::move(config)), work_(loop_.get_executor()), tick_(loop_) {
  Supervisor::Hooks hooks;
  hooks.on_available = [this](Replica&) { dispatcher_->Pump(); };
  supervisor_ = std::make_unique<Supervisor>(loop_, config_, std::move(hooks));
  dispatcher_ = std::make_unique<Dispatcher>(loop_, config_, *supervisor_, metrics_);
  if (!config_.otlp_endpoint.empty()) {
    telemetry::ExporterOptions o;
    o.endpoint = config_.otlp_endpoint;
    o.service_name = config_.otlp_service_name;
    o.resource_attributes = {{"service.version", config_.version},
                             {"kiln.role", std::string("router")}};
    spans_ = std::make_unique<telemetry::SpanExporter>(std::move(o));
    dispatcher_->set_spans(spans_.get());
  }
  http::ServerOptions options = config_.http;
  options.error_response = [](int status, const std::string& message) {
    http::Response r;
    r.status = status;
    r.body = api::TgiErrorJson(api::ApiError(status, "validation", message));
    return r;
  };
  http_ = std::make_unique<http::HttpServer>(
      options, [this](http::Request request, std::shared_ptr<http::Exchange> exchange) {
        Handle(std::move(request), std::move(exchange));
      });
}

ReplicaRouter::~ReplicaRouter() { Stop(); }

uint16_t ReplicaRouter::port() const { return http_->port(); }

bool ReplicaRouter::Start(const std::function<bool()>& interrupted) {
  http_->Start();  // first: a port in use fails before any replica is spawned
  loop_thread_ = std::thread([this] { loop_.run(); });
  OnLoop([this] {
    supervisor_->StartAll();
    ArmTick();
    return 0;
  });
  const auto deadline = Clock::now() + config_.startup_timeout;
  for (;;) {
    const auto [started, failure] = OnLoop([this] {
      return std::make_pair(supervisor_->all_started(), supervisor_->startup_failure());
    });
    if (!failure.empty()) {
      Stop();
      throw Error(failure);
    }
    if (started) return true;
    if (interrupted && interrupted()) {
      Stop();
      return false;
    }
    if (Clock::now() > deadline) {
      Stop();
      throw Error(StrCat("the replicas were not all ready after ",
                         config_.startup_timeout.count() / 1000, " s"));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

void ReplicaRouter::ArmTick() {
  tick_.expires_after(kTick);
  tick_.async_wait([this](boost::system::error_code ec) {
    if (ec) return;
    const Clock::time_point now = Clock::now();
    supervisor_->Tick(now);
    dispatcher_->Tick(now);
    ArmTick();
  });
}

void ReplicaRouter::Drain(const std::function<bool()>& cut_short) {
  draining_ = true;
  OnLoop([this] {
    dispatcher_->BeginDrain();
    return 0;
  });
  const auto deadline = Clock::now() + config_.drain_timeout;
  while (OnLoop([this] { return dispatcher_->active(); }) > 0) {
    if (Clock::now() > deadline || (cut_short && cut_short())) {
      log::Warn("drain: requests still in flight are cut off");
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  OnLoop([this] {
    supervisor_->BeginStop();
    return 0;
  });
  const auto replicas_deadline = Clock::now() + config_.drain_timeout;
  while (!OnLoop([this] { return supervisor_->AllExited(); })) {
    if (Clock::now() > replicas_deadline || (cut_short && cut_short())) {
      log::Warn("drain: killing the replicas still running");
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

void ReplicaRouter::Stop() {
  if (stopped_) return;
  stopped_ = true;
  http_->Stop();
  if (loop_thread_.joinable()) {
    OnLoop([this] {
      tick_.cancel();
      dispatcher_->Shutdown();
      supervisor_->KillAll();
      dispatcher_->Detach();
      supervisor_.reset();
      return 0;
    });
    work_.reset();
    loop_.stop();
    loop_thread_.join();
  }
  dispatcher_.reset();
  supervisor_.reset();
  if (spans_ != nullptr) spans_->Shutdown(std::chrono::seconds(2));
}

void ReplicaRouter::Handle(http::Request request, std::shared_ptr<http::Exchange> exchange) {
  const Clock::time_point arrival = Clock::now();
  boost::asio::post(
      loop_, [this, request = std::move(request), exchange = std::move(exchange),
              arrival]() mutable { Route(std::move(request), std::move(exchange), arrival); });
}

bool ReplicaRouter::Authorized(const http::Request& request) const {
  return config_.api_key.empty() ||
         BearerTokenMatches(request.Header("authorization"), config_.api_key);
}

bool ReplicaRouter::AnyAvailable() const {
  for (const Replica& r : supervisor_->replicas()) {
    if (r.available()) return true;
  }
  return false;
}

void ReplicaRouter::Route(http::Request request, std::shared_ptr<http::Exchange> exchange,
                          Clock::time_point arrival) {
  if (!supervisor_ || exchange->closed()) return;
  const bool get = request.method == "GET" || request.method == "HEAD";
  if (get && (request.path == "/health" || request.path == "/ping" || request.path == "/")) {
    return ServeHealth(exchange);
  }
  if (get &&
      (request.path == "/info" || request.path == "/metrics" || request.path == "/v1/status")) {
    if (!Authorized(request)) {
      http::Response r;
      r.status = 401;
      r.headers.emplace_back("WWW-Authenticate", "Bearer");
      r.body = api::TgiErrorJson(api::ApiError(
          401, "authentication", "Unauthorized: send `Authorization: Bearer <api-key>`"));
      return exchange->Respond(std::move(r));
    }
    if (request.path == "/v1/status") return ServeStatus(exchange);
    return request.path == "/info" ? ServeInfo(exchange) : ServeMetrics(exchange);
  }
  auto call =
      std::make_shared<ProxyCall>(*dispatcher_, std::move(request), std::move(exchange), arrival);
  if (config_.prefix_affinity && call->generation()) {
    call->set_prefix_key(PromptPrefixKey(call->body(), config_.prefix_affinity_chars));
  }
  call->WatchClient();
  dispatcher_->Submit(std::move(call));
}

void ReplicaRouter::ServeHealth(const std::shared_ptr<http::Exchange>& exchange) const {
  if (draining_ || !AnyAvailable()) {
    return RespondJson(exchange, 503,
                       api::TgiErrorJson(api::ApiError(503, "healthcheck", "unhealthy")));
  }
  http::Response ok;
  ok.content_type = "";
  exchange->Respond(std::move(ok));
}

void ReplicaRouter::ServeInfo(const std::shared_ptr<http::Exchange>& exchange) const {
  nlohmann::json info = nlohmann::json::object();
  for (const Replica& r : supervisor_->replicas()) {
    if (r.available() && !r.info.empty()) {
      info = nlohmann::json::parse(r.info, nullptr, false);
      break;
    }
  }
  if (!info.is_object()) info = nlohmann::json::object();
  nlohmann::json replicas = nlohmann::json::array();
  nlohmann::json core_sets = nlohmann::json::array();
  for (const Replica& r : supervisor_->replicas()) {
    core_sets.push_back(FormatCoreSet(r.cores));
    replicas.push_back({{"index", r.index},
                        {"cores", FormatCoreSet(r.cores)},
                        {"state", ReplicaStateName(r.state)},
                        {"port", r.port},
                        {"pid", r.process ? r.process->pid() : 0},
                        {"restarts", r.restarts},
                        {"outstanding", r.outstanding},
                        {"capacity", r.capacity}});
  }
  info["replica_count"] = supervisor_->replicas().size();
  info["core_sets"] = core_sets;
  info["replicas"] = replicas;
  info["router"] = "kiln-launch";
  RespondJson(exchange, 200, info.dump());
}

void ReplicaRouter::ServeMetrics(const std::shared_ptr<http::Exchange>& exchange) {
  struct Gather {
    std::vector<std::string> texts;
    size_t pending = 0;
    std::string own;
    std::shared_ptr<http::Exchange> exchange;
  };
  auto gather = std::make_shared<Gather>();
  gather->exchange = exchange;
  RouterGauges g;
  g.active = static_cast<int64_t>(dispatcher_->active());
  g.queued = static_cast<int64_t>(dispatcher_->queued());
  g.queue_capacity = config_.router_queue;
  g.connections = static_cast<int64_t>(http_->connection_count());
  g.draining = draining_;
  gather->own = metrics_.Render(supervisor_->replicas(), dispatcher_->counters(), g);
  if (spans_ != nullptr) telemetry::AppendExporterMetrics(gather->own, spans_->counters());
  auto& replicas = supervisor_->replicas();
  gather->texts.resize(replicas.size());
  auto finish = [gather] {
    MetricsMerger merger;
    merger.Add(gather->own, "", "");
    for (size_t i = 0; i < gather->texts.size(); ++i) {
      if (!gather->texts[i].empty()) merger.Add(gather->texts[i], "replica", std::to_string(i));
    }
    http::Response r;
    r.content_type = "text/plain; version=0.0.4; charset=utf-8";
    r.body = merger.Render();
    gather->exchange->Respond(std::move(r));
  };
  for (Replica& r : replicas) {
    if (!r.process || !r.probe) continue;
    ++gather->pending;
    FetchText(*r.probe, "/metrics", config_.api_key,
              [gather, finish, index = r.index](int status, std::string body) {
                if (status == 200) gather->texts[static_cast<size_t>(index)] = std::move(body);
                if (--gather->pending == 0) finish();
              });
  }
  if (gather->pending == 0) finish();
}

}  // namespace kiln
