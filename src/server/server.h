// The TGI- and OpenAI-compatible HTTP server of `kiln serve`: routes over an HttpServer, in
// front of one or several models, each a GenerationBackend (the engine) or an EncoderEngine.
// With several, a request goes to the model its OpenAI body names ("model"), or that its path
// names (/models/NAME/generate, ...), else to the first; /v1/models lists them all and
// /metrics carries every model's metrics under a `model` label. Stop sequence: BeginDrain
// (health turns 503, new generation requests get 503), WaitDrained (in-flight requests
// finish), Stop.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "http/http_server.h"
#include "server/chat_template.h"
#include "server/generation_backend.h"
#include "server/route_table.h"
#include "server/server_config.h"
#include "server/server_state.h"
#include "tokenizer/tokenizer.h"

namespace kiln {

// One model behind the server: exactly one of backend and encoder is set.
struct HostedModel {
  ServerConfig config;  // config.model_id: the name requests use
  GenerationBackend* backend = nullptr;
  EncoderEngine* encoder = nullptr;
  const Tokenizer* tokenizer = nullptr;
  ChatTemplateFn chat_template;  // decoders; empty: ChatML
};

class Server {
 public:
  // The first model is the default; its config's HTTP, auth, CORS, drain and trace settings
  // are the server's. Backends, engines and tokenizers must outlive Stop().
  explicit Server(std::vector<HostedModel> models);
  // `backend` and `tokenizer` must outlive the server's Stop(); `chat_template` empty: ChatML.
  // Shut down in this order: Stop(), then destroy the engine (its last events find the
  // connections closed), then the server.
  Server(ServerConfig config, GenerationBackend& backend, const Tokenizer* tokenizer,
         ChatTemplateFn chat_template = nullptr);
  // An encoder model's server (embeddings, rerank, predict, qa); `encoder` outlives Stop().
  Server(ServerConfig config, EncoderEngine& encoder, const Tokenizer* tokenizer);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  void Start();  // throws kiln::Error when the port cannot be bound
  uint16_t port() const;
  void BeginDrain();
  // True once no admitted request is left, false if `timeout` passed first.
  bool WaitDrained(std::chrono::milliseconds timeout);
  void Stop();

  ServerState& state() { return *models_.front().state; }  // the default model's

 private:
  struct Hosted {
    std::shared_ptr<ServerState> state;
    std::unique_ptr<RouteTable> routes;
  };
  void Handle(http::Request request, std::shared_ptr<http::Exchange> exchange);
  // The model a request is for: its path's /models/NAME/ (stripped from the path) or its
  // OpenAI body's "model"; nullptr when it names one that is not here (`unknown` set).
  Hosted* Target(http::Request& request, std::string* unknown);
  nlohmann::json ModelList() const;
  std::string MergedMetrics() const;
  std::vector<Hosted> models_;
  std::unique_ptr<http::HttpServer> http_;
};

}  // namespace kiln
