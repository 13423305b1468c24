#include "server/server.h"

#include <thread>

#include "api/api_error.h"
#include "server/routes.h"
#include "util/error.h"
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
  for (HostedModel& m : models) {
    for (const Hosted& h : models_) {
      KILN_CHECK(h.state->config.model_id != m.config.model_id, "two models are named '",
                 m.config.model_id, "'");
    }
    auto state = std::make_shared<ServerState>(std::move(m.config), m.backend, m.tokenizer,
                                               std::move(m.chat_template));
    state->encoder = m.encoder;
    auto routes = std::make_unique<RouteTable>(*state);
    models_.push_back({std::move(state), std::move(routes)});
  }
  ServerState& first = *models_.front().state;
  if (!first.config.otlp_endpoint.empty()) {
    telemetry::ExporterOptions o;
    o.endpoint = first.config.otlp_endpoint;
    o.service_name = first.config.otlp_service_name;
    o.resource_attributes = {{"service.version", first.config.version},
                             {"kiln.model", first.config.model_id}};
    auto spans = std::make_shared<telemetry::SpanExporter>(std::move(o));
    for (Hosted& h : models_) h.state->spans = spans;
  }
  http::ServerOptions options = first.config.http;
  options.error_response = HttpLayerError;
  http_ = std::make_unique<http::HttpServer>(
      options, [this](http::Request request, std::shared_ptr<http::Exchange> exchange) {
        Handle(std::move(request), std::move(exchange));
      });
  for (Hosted& h : models_) {
    h.state->connection_count = [this] { return http_->connection_count(); };
  }
  if (models_.size() > 1) {
    // The default model's /v1/models and /metrics speak for all of them.
    first.model_list = [this] { return ModelList(); };
    first.merged_metrics = [this] { return MergedMetrics(); };
  }
}

Server::Hosted* Server::Target(http::Request& request, std::string* unknown) {
  auto find = [&](std::string_view name) -> Hosted* {
    for (Hosted& h : models_) {
      if (h.state->config.model_id == name) return &h;
    }
    *unknown = std::string(name);
    return nullptr;
  };
  constexpr std::string_view kPrefix = "/models/";
  if (std::string_view(request.path).substr(0, kPrefix.size()) == kPrefix) {
    const std::string rest = request.path.substr(kPrefix.size());
    const size_t slash = rest.find('/');
    Hosted* h = find(rest.substr(0, slash));
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
  return &models_.front();
}

void Server::Handle(http::Request request, std::shared_ptr<http::Exchange> exchange) {
  if (models_.size() == 1) return models_.front().routes->Handle(std::move(request), exchange);
  std::string unknown;
  Hosted* target = Target(request, &unknown);
  if (target == nullptr) {
    const ErrorStyle style =
        request.path.rfind("/v1/", 0) == 0 ? ErrorStyle::kOpenAi : ErrorStyle::kTgi;
    return models_.front().routes->Reject(
        std::move(request), std::move(exchange),
        api::ApiError(404, "model_not_found", StrCat("The model `", unknown, "` does not exist."),
                      "model"),
        style);
  }
  target->routes->Handle(std::move(request), std::move(exchange));
}

nlohmann::json Server::ModelList() const {
  nlohmann::json data = nlohmann::json::array();
  for (const Hosted& h : models_) {
    const ServerState& s = *h.state;
    const EngineStats stats = BackendStats(s);
    data.push_back({{"id", s.config.model_id},
                    {"object", "model"},
                    {"created", 0},
                    {"owned_by", "kiln"},
                    {"root", s.config.model_id},
                    {"parent", nullptr},
                    {"max_model_len", s.config.limits.max_total_tokens},
                    {"kind", s.encoder != nullptr ? "encoder" : "decoder"},
                    {"cores", stats.cores},
                    {"weight_bytes", s.config.weight_bytes},
                    {"state", s.draining ? "draining" : "ready"}});
  }
  return data;
}

std::string Server::MergedMetrics() const {
  MetricsMerger merger;
  for (const Hosted& h : models_) {
    merger.Add(RenderMetrics(*h.state), "model", h.state->config.model_id);
  }
  return merger.Render();
}

// Spans of requests that ended late (the engine finished them after Stop) are sent too: the
// exporter flushes here, for at most 2 s.
Server::~Server() {
  Stop();
  if (state().spans != nullptr) state().spans->Shutdown(std::chrono::seconds(2));
}

void Server::Start() { http_->Start(); }

uint16_t Server::port() const { return http_->port(); }

void Server::BeginDrain() {
  for (Hosted& h : models_) h.state->draining = true;
}

bool Server::WaitDrained(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (const Hosted& h : models_) {
    while (h.state->admission.in_flight() > 0) {
      if (std::chrono::steady_clock::now() >= deadline) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
  return true;
}

void Server::Stop() { http_->Stop(); }

}  // namespace kiln
