// Everything `kiln serve` configures about the HTTP side: limits, admission, auth, CORS,
// drain. Filled from flags and environment variables (cli/serve_command.cc) with TGI's names.
#pragma once

#include <chrono>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "api/limits.h"
#include "http/server_options.h"

namespace kiln {

struct ServerConfig {
  std::string model_id = "kiln";  // reported by /info, /v1/models and OpenAI "model"
  std::string version = "0.1.0";
  // The Kiln artifact the model was mapped from (cli/served_model.h), /info's "kiln_artifact";
  // null when the model was loaded from its source.
  nlohmann::json artifact_info;
  int64_t weight_bytes = 0;  // size of the mapped weights file(s), for /v1/status
  api::ValidationLimits limits;
  int32_t max_concurrent_requests = 128;            // requests the engine runs at once
  int32_t max_queue = 0;                            // admitted requests waiting beyond those
  int32_t max_batch_size = 0;                       // informational (/info)
  int32_t max_batch_prefill_tokens = 0;             // informational (/info)
  int64_t max_batch_total_tokens = 0;               // informational (/info, metrics)
  std::string api_key;                              // empty: no auth
  std::vector<std::string> cors_allow_origins;      // empty: no CORS headers; "*" allows any
  std::chrono::milliseconds drain_timeout{90'000};  // TGI's graceful termination timeout
  http::ServerOptions http;
  // Traces: OTLP/HTTP endpoint (empty: none) and the resource's service.name.
  std::string otlp_endpoint;
  std::string otlp_service_name = "kiln";
  // Access-log lines carry the request body (prompts); a debugging aid, off by default.
  bool log_prompts = false;
};

}  // namespace kiln
