#include "server/server.h"

#include <thread>

#include "api/api_error.h"

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

}  // namespace

Server::Server(ServerConfig config, EncoderEngine& encoder, const Tokenizer* tokenizer)
    : Server(std::make_shared<ServerState>(std::move(config), nullptr, tokenizer, nullptr)) {
  state_->encoder = &encoder;
}

Server::Server(ServerConfig config, GenerationBackend& backend, const Tokenizer* tokenizer,
               ChatTemplateFn chat_template)
    : Server(std::make_shared<ServerState>(std::move(config), &backend, tokenizer,
                                           std::move(chat_template))) {}

Server::Server(std::shared_ptr<ServerState> state)
    : state_(std::move(state)), route_table_(*state_) {
  if (!state_->config.otlp_endpoint.empty()) {
    telemetry::ExporterOptions o;
    o.endpoint = state_->config.otlp_endpoint;
    o.service_name = state_->config.otlp_service_name;
    o.resource_attributes = {{"service.version", state_->config.version},
                             {"kiln.model", state_->config.model_id}};
    state_->spans = std::make_shared<telemetry::SpanExporter>(std::move(o));
  }
  http::ServerOptions options = state_->config.http;
  options.error_response = HttpLayerError;
  http_ = std::make_unique<http::HttpServer>(
      options, [this](http::Request request, std::shared_ptr<http::Exchange> exchange) {
        route_table_.Handle(std::move(request), std::move(exchange));
      });
  state_->connection_count = [this] { return http_->connection_count(); };
}

// Spans of requests that ended late (the engine finished them after Stop) are sent too: the
// exporter flushes here, for at most 2 s.
Server::~Server() {
  Stop();
  if (state_->spans != nullptr) state_->spans->Shutdown(std::chrono::seconds(2));
}

void Server::Start() { http_->Start(); }

uint16_t Server::port() const { return http_->port(); }

void Server::BeginDrain() { state_->draining = true; }

bool Server::WaitDrained(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (state_->admission.in_flight() > 0) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return true;
}

void Server::Stop() { http_->Stop(); }

}  // namespace kiln
