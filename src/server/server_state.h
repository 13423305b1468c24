// What every route handler shares: config, backend, tokenizer, chat template, metrics,
// admission and the drain flag. Owned by kiln::Server.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "engine/encoder_engine.h"
#include "server/admission.h"
#include "server/chat_template.h"
#include "server/generation_backend.h"
#include "server/metrics.h"
#include "server/server_config.h"
#include "telemetry/span_exporter.h"
#include "tokenizer/tokenizer.h"

namespace kiln {

// Shared (not only referenced) by generation calls: a call the engine finishes late, after the
// server object is gone, still counts itself in these metrics.
struct ServerState : std::enable_shared_from_this<ServerState> {
  ServerState(ServerConfig c, GenerationBackend* b, const Tokenizer* t, ChatTemplateFn tmpl)
      : config(std::move(c)),
        backend(b),
        tokenizer(t),
        chat_template(tmpl ? std::move(tmpl) : ChatTemplateFn(RenderChatMl)),
        metrics(config.limits.max_input_tokens, config.limits.max_total_tokens),
        admission(config.max_concurrent_requests, config.max_queue) {}

  const ServerConfig config;
  GenerationBackend* const backend;  // null when the model is an encoder
  EncoderEngine* encoder = nullptr;  // set when it is (the encoder routes need it)
  const Tokenizer* const tokenizer;
  const ChatTemplateFn chat_template;
  Metrics metrics;
  Admission admission;
  std::atomic<bool> draining{false};
  std::function<size_t()> connection_count;
  // Set on the default model's state when the server hosts several: /v1/models' "data" and
  // /metrics' text for all of them.
  std::function<nlohmann::json()> model_list;
  std::function<std::string()> merged_metrics;
  // Set by kiln::Server before it serves when config.otlp_endpoint is set; else null.
  std::shared_ptr<telemetry::SpanExporter> spans;
  const std::chrono::steady_clock::time_point started = std::chrono::steady_clock::now();
};

}  // namespace kiln
