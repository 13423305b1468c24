// The TGI- and OpenAI-compatible HTTP server of `kiln serve`: routes over an HttpServer, in
// front of one or several models, each a GenerationBackend (the engine) or an EncoderEngine.
// With several, a request goes to the model its OpenAI body names ("model"), or that its path
// names (/models/NAME/generate, ...), else to the first; /v1/models lists them all and
// /metrics carries every model's metrics under a `model` label. Stop sequence: BeginDrain
// (health turns 503, new generation requests get 503), WaitDrained (in-flight requests
// finish), Stop.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <utility>
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

// What a model is loaded from (kiln serve --model NAME=SOURCE:cores=...,kv-cache-dtype=...;
// POST /admin/models).
struct ModelRequest {
  std::string name, source, cores, kv_cache_dtype;
};

// A model the server owns: everything HostedModel points into.
class LoadedModel {
 public:
  virtual ~LoadedModel() = default;
  HostedModel hosted;
  // Ends every request still running (streams get an error event) and frees the engine and
  // weights; the backend objects stay valid and refuse new work.
  virtual void Shutdown() = 0;
};

// Loads a model (the CLI's loader); kiln::Error when it cannot.
using ModelLoader = std::function<std::unique_ptr<LoadedModel>(const ModelRequest&)>;

class Server {
 public:
  // The first model is the default; its config's HTTP, auth, CORS, drain and trace settings
  // are the server's. Backends, engines and tokenizers must outlive Stop().
  explicit Server(std::vector<HostedModel> models);
  // Models the server owns, loaded (and reloaded, and loaded at run time through the admin
  // routes) by `loader`. `failed`: models whose load failed at start, with the error; they are
  // listed as failed and retried every `retry` until they load.
  Server(std::vector<std::unique_ptr<LoadedModel>> models,
         std::vector<std::pair<ModelRequest, std::string>> failed, ServerConfig front,
         ModelLoader loader, std::chrono::milliseconds retry);
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
  // Stops serving; owned models are shut down (their running requests end).
  void Stop();

  ServerState& state();  // the default model's (the front's when it has none)

 private:
  struct Hosted {
    std::string name;
    std::shared_ptr<ServerState> state;  // null while the model is not loaded
    std::shared_ptr<RouteTable> routes;
    std::shared_ptr<LoadedModel> owner;  // null for models the caller owns
    ModelRequest request;                // how to load it again
    std::string status = "ready";        // ready, loading, failed, unloading
    std::string error;                   // why it failed
  };
  using Models = std::vector<std::shared_ptr<Hosted>>;

  void InitFront(ServerConfig config);
  std::shared_ptr<Hosted> MakeHosted(HostedModel m, std::shared_ptr<LoadedModel> owner);
  void AddAll(Models hosted);
  Models Snapshot() const;
  void Handle(http::Request request, std::shared_ptr<http::Exchange> exchange);
  // The model a request is for: its path's /models/NAME/ (stripped from the path) or its
  // OpenAI body's "model"; nullptr when it names one that is not here (`unknown` set).
  std::shared_ptr<Hosted> Target(const Models& models, http::Request& request,
                                 std::string* unknown);
  nlohmann::json ModelList() const;
  std::string MergedMetrics() const;
  // Admin routes (server_admin.cc): GET/POST /admin/models, DELETE /admin/models/NAME.
  bool HandleAdmin(http::Request& request, std::shared_ptr<http::Exchange>& exchange);
  void LoadModel(ModelRequest request, std::shared_ptr<http::Exchange> exchange);
  void UnloadModel(const std::string& name, std::chrono::milliseconds drain,
                   std::shared_ptr<http::Exchange> exchange);
  void RetryFailed();

  bool multi_ = false;     // several models (or a loader): dispatch by model, admin routes
  mutable std::mutex mu_;  // guards models_ and retired_
  Models models_;
  std::vector<std::shared_ptr<LoadedModel>> retired_;  // unloaded: shut down, kept valid
  // Serves what no model can: rejections (unknown or unavailable models) and the admin routes'
  // errors; backend-less.
  std::shared_ptr<ServerState> front_;
  std::unique_ptr<RouteTable> front_routes_;
  ModelLoader loader_;
  std::chrono::milliseconds retry_{0};
  std::mutex admin_mu_;               // one load or unload at a time
  std::vector<std::thread> workers_;  // loads, unloads and retries in progress
  std::mutex workers_mu_;
  std::atomic<bool> stopping_{false};
  std::unique_ptr<http::HttpServer> http_;
};

}  // namespace kiln
