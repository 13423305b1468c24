// The TGI- and OpenAI-compatible HTTP server of `kiln serve`: routes over an HttpServer, in
// front of a GenerationBackend (the engine). Stop sequence: BeginDrain (health turns 503, new
// generation requests get 503), WaitDrained (in-flight requests finish), Stop.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>

#include "http/http_server.h"
#include "server/chat_template.h"
#include "server/generation_backend.h"
#include "server/route_table.h"
#include "server/server_config.h"
#include "server/server_state.h"
#include "tokenizer/tokenizer.h"

namespace kiln {

class Server {
 public:
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

  ServerState& state() { return *state_; }

 private:
  explicit Server(std::shared_ptr<ServerState> state);
  std::shared_ptr<ServerState> state_;
  RouteTable route_table_;
  std::unique_ptr<http::HttpServer> http_;
};

}  // namespace kiln
