#include "server/server.h"

#include "api/api_error.h"
#include "server/routes.h"
#include "util/error.h"
#include "util/log.h"
#include "util/metrics_merge.h"

namespace kiln {
namespace {

// Bodies of the errors the HTTP layer answers by itself, in TGI's shape.
http::Response HttpLayerError(int status, const std::string& message) {
  const char* type = status == 413   ? "payload_too_large"
                     : status == 431 ? "headers_too_large"
                     : status >= 500 ? "internal"
                                     : "bad_request";
  http::Response r;
  r.status = status;
  r.body = api::TgiErrorJson(api::ApiError(status, type, message));
  return r;
}

// The OpenAI routes whose body names the model.
bool NamesModelInBody(const http::Request& r) {
  return r.method == "POST" && (r.path == "/v1/chat/completions" || r.path == "/v1/completions" ||
                                r.path == "/v1/embeddings");
}

ErrorStyle StyleOf(const http::Request& r) {
  return r.path.rfind("/v1/", 0) == 0 ? ErrorStyle::kOpenAi : ErrorStyle::kTgi;
}

}  // namespace

Server::Server(ServerConfig config, EncoderEngine& encoder, const Tokenizer* tokenizer)
    : Server(std::vector<HostedModel>{
          HostedModel{std::move(config), nullptr, &encoder, tokenizer, nullptr}}) {}

Server::Server(ServerConfig config, GenerationBackend& backend, const Tokenizer* tokenizer,
               ChatTemplateFn chat_template)
    : Server(std::vector<HostedModel>{HostedModel{std::move(config), &backend, nullptr, tokenizer,
                                                  std::move(chat_template)}}) {}

Server::Server(std::vector<HostedModel> models) {
  KILN_CHECK(!models.empty(), "a server needs at least one model");
  ServerConfig front = models.front().config;
  multi_ = models.size() > 1;
  InitFront(std::move(front));
  Models hosted;
  for (HostedModel& m : models) hosted.push_back(MakeHosted(std::move(m), nullptr));
  AddAll(std::move(hosted));
}

Server::Server(std::vector<std::unique_ptr<LoadedModel>> models,
               std::vector<std::pair<ModelRequest, std::string>> failed, ServerConfig front,
               ModelLoader loader, std::chrono::milliseconds retry)
    : loader_(std::move(loader)), retry_(retry) {
  KILN_CHECK(!models.empty() || !failed.empty(), "a server needs at least one model");
  multi_ = true;
  InitFront(std::move(front));
  Models hosted;
  for (std::unique_ptr<LoadedModel>& m : models) {
    std::shared_ptr<LoadedModel> owner = std::move(m);
    hosted.push_back(MakeHosted(owner->hosted, owner));
  }
  for (auto& [request, error] : failed) {
    auto h = std::make_shared<Hosted>();
    h->name = request.name;
    h->request = request;
    h->status = "failed";
    h->error = error;
    hosted.push_back(std::move(h));
  }
  AddAll(std::move(hosted));
  if (!failed.empty() && loader_) {
    std::lock_guard lock(workers_mu_);
    workers_.emplace_back([this] { RetryFailed(); });
  }
}

void Server::InitFront(ServerConfig config) {
  front_ = std::make_shared<ServerState>(std::move(config), nullptr, nullptr, nullptr);
  front_routes_ = std::make_unique<RouteTable>(*front_);
  if (!front_->config.otlp_endpoint.empty()) {
    telemetry::ExporterOptions o;
    o.endpoint = front_->config.otlp_endpoint;
    o.service_name = front_->config.otlp_service_name;
    o.resource_attributes = {{"service.version", front_->config.version},
                             {"kiln.model", front_->config.model_id}};
    front_->spans = std::make_shared<telemetry::SpanExporter>(std::move(o));
  }
  http::ServerOptions options = front_->config.http;
  options.error_response = HttpLayerError;
  http_ = std::make_unique<http::HttpServer>(
      options, [this](http::Request request, std::shared_ptr<http::Exchange> exchange) {
        Handle(std::move(request), std::move(exchange));
      });
  front_->connection_count = [this] { return http_->connection_count(); };
}

std::shared_ptr<Server::Hosted> Server::MakeHosted(HostedModel m,
                                                   std::shared_ptr<LoadedModel> owner) {
  auto h = std::make_shared<Hosted>();
  h->name = m.config.model_id;
  h->request.name = h->name;
  h->state = std::make_shared<ServerState>(std::move(m.config), m.backend, m.tokenizer,
                                           std::move(m.chat_template));
  h->state->encoder = m.encoder;
  h->state->spans = front_->spans;
  h->state->connection_count = [this] { return http_->connection_count(); };
  if (multi_) {
    // Whichever model answers /v1/models and /metrics speaks for all of them.
    h->state->model_list = [this] { return ModelList(); };
    h->state->merged_metrics = [this] { return MergedMetrics(); };
  }
  h->routes = std::make_shared<RouteTable>(*h->state);
  h->owner = std::move(owner);
  return h;
}

void Server::AddAll(Models hosted) {
  for (size_t i = 0; i < hosted.size(); ++i) {
    for (size_t j = 0; j < i; ++j) {
      KILN_CHECK(hosted[i]->name != hosted[j]->name, "two models are named '", hosted[i]->name,
                 "'");
    }
  }
  std::lock_guard lock(mu_);
  models_ = std::move(hosted);
}

Server::Models Server::Snapshot() const {
  std::lock_guard lock(mu_);
  return models_;
}

ServerState& Server::state() {
  for (const auto& h : Snapshot()) {
    if (h->state != nullptr) return *h->state;
  }
  return *front_;
}

std::shared_ptr<Server::Hosted> Server::Target(const Models& models, http::Request& request,
                                               std::string* unknown) {
  auto find = [&](std::string_view name) -> std::shared_ptr<Hosted> {
    for (const auto& h : models) {
      if (h->name == name) return h;
    }
    *unknown = std::string(name);
    return nullptr;
  };
  constexpr std::string_view kPrefix = "/models/";
  if (std::string_view(request.path).substr(0, kPrefix.size()) == kPrefix) {
    const std::string rest = request.path.substr(kPrefix.size());
    const size_t slash = rest.find('/');
    std::shared_ptr<Hosted> h = find(rest.substr(0, slash));
    request.path = slash == std::string::npos ? "/" : rest.substr(slash);
    return h;
  }
  if (NamesModelInBody(request)) {
    const nlohmann::json body = nlohmann::json::parse(request.body, nullptr, false);
    if (body.is_object()) {
      auto it = body.find("model");
      if (it != body.end() && it->is_string()) return find(it->get_ref<const std::string&>());
    }
  }
  // The default: the first model that is loaded.
  for (const auto& h : models) {
    if (h->state != nullptr) return h;
  }
  if (models.empty()) {
    *unknown = "(none)";
    return nullptr;
  }
  return models.front();
}

void Server::Handle(http::Request request, std::shared_ptr<http::Exchange> exchange) {
  if (!multi_) return Snapshot().front()->routes->Handle(std::move(request), exchange);
  if (HandleAdmin(request, exchange)) return;
  const Models models = Snapshot();
  std::string unknown;
  std::shared_ptr<Hosted> target = Target(models, request, &unknown);
  if (target == nullptr) {
    const ErrorStyle style = StyleOf(request);
    return front_routes_->Reject(
        std::move(request), std::move(exchange),
        api::ApiError(404, "model_not_found", StrCat("The model `", unknown, "` does not exist."),
                      "model"),
        style);
  }
  if (target->state == nullptr) {
    const ErrorStyle style = StyleOf(request);
    return front_routes_->Reject(
        std::move(request), std::move(exchange),
        api::ApiError(503, "unhealthy",
                      StrCat("The model `", target->name, "` is not available (", target->status,
                             target->error.empty() ? "" : ": " + target->error, ")")),
        style);
  }
  target->routes->Handle(std::move(request), std::move(exchange));
}

nlohmann::json Server::ModelList() const {
  nlohmann::json data = nlohmann::json::array();
  for (const auto& h : Snapshot()) {
    nlohmann::json card = {{"id", h->name},      {"object", "model"}, {"created", 0},
                           {"owned_by", "kiln"}, {"root", h->name},   {"parent", nullptr},
                           {"state", h->status}};
    if (!h->error.empty()) card["error"] = h->error;
    if (h->state != nullptr) {
      const ServerState& s = *h->state;
      card["max_model_len"] = s.config.limits.max_total_tokens;
      card["kind"] = s.encoder != nullptr ? "encoder" : "decoder";
      card["cores"] = BackendStats(s).cores;
      card["weight_bytes"] = s.config.weight_bytes;
      if (s.draining) card["state"] = "draining";
    }
    data.push_back(std::move(card));
  }
  return data;
}

std::string Server::MergedMetrics() const {
  MetricsMerger merger;
  for (const auto& h : Snapshot()) {
    if (h->state != nullptr) merger.Add(RenderMetrics(*h->state), "model", h->name);
  }
  return merger.Render();
}

// Spans of requests that ended late (the engine finished them after Stop) are sent too: the
// exporter flushes here, for at most 2 s.
Server::~Server() {
  Stop();
  if (front_->spans != nullptr) front_->spans->Shutdown(std::chrono::seconds(2));
}

void Server::Start() { http_->Start(); }

uint16_t Server::port() const { return http_->port(); }

void Server::BeginDrain() {
  front_->draining = true;
  for (const auto& h : Snapshot()) {
    if (h->state != nullptr) h->state->draining = true;
  }
}

bool Server::WaitDrained(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (const auto& h : Snapshot()) {
    while (h->state != nullptr && h->state->admission.in_flight() > 0) {
      if (std::chrono::steady_clock::now() >= deadline) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
  return true;
}

void Server::Stop() {
  stopping_ = true;
  http_->Stop();
  std::vector<std::thread> workers;
  {
    std::lock_guard lock(workers_mu_);
    workers.swap(workers_);
  }
  for (std::thread& t : workers) t.join();
  // Owned models end their running requests now, while every state they reach still lives.
  for (const auto& h : Snapshot()) {
    if (h->owner != nullptr) h->owner->Shutdown();
  }
}

}  // namespace kiln
