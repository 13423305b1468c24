// TGI's /generate, /generate_stream and POST / request: {"inputs", "parameters", "stream"},
// parsed and validated with TGI's messages (router/src/lib.rs GenerateParameters,
// router/src/validation.rs). Token counts are checked later, after tokenization
// (api/token_budget.h).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "api/generation_options.h"
#include "api/limits.h"

namespace kiln::api {

struct GenerateRequest {
  std::string inputs;
  GenerationOptions options;
  bool details = false;
  bool decoder_input_details = false;
  bool return_full_text = false;
  int32_t best_of = 1;
};

// The body's "stream" flag (POST / streams when it is true). Throws ApiError on a wrong type.
bool ReadStreamFlag(const nlohmann::json& body);

// Throws ApiError (422 with TGI's message, or 422 for a wrong type) on the first problem.
// `streaming`: the response will be SSE, which rules out best_of and decoder_input_details.
GenerateRequest ParseGenerateRequest(const nlohmann::json& body, const ValidationLimits& limits,
                                     bool streaming);

}  // namespace kiln::api
