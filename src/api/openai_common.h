// Request fields shared by /v1/chat/completions and /v1/completions: sampling, stopping,
// choices, streaming options, plus the vLLM extensions benchmarks send (ignore_eos,
// min_tokens, top_k, min_p, repetition_penalty, stop_token_ids). OpenAI semantics differ from
// TGI's where clients depend on it: temperature 0 means greedy and top_p 1.0 means "off".
#pragma once

#include <string>

#include "api/generation_options.h"
#include "api/json_fields.h"
#include "api/limits.h"

namespace kiln::api {

struct StreamOptions {
  bool stream = false;
  bool include_usage = false;           // a last chunk with choices [] and usage
  bool continuous_usage_stats = false;  // usage on every chunk (vLLM)
};

// Sampling, stopping, n and the vLLM extensions. `default_max_tokens` applies when neither
// max_tokens nor max_completion_tokens is given (unset: the rest of the token budget).
GenerationOptions ParseOpenAiOptions(const JsonFields& f, const ValidationLimits& limits,
                                     std::optional<int32_t> default_max_tokens);

StreamOptions ParseStreamOptions(const JsonFields& f);

// `response_format` other than {"type": "text"}: refused (no constrained decoding here).
void RejectResponseFormat(const JsonFields& f);

}  // namespace kiln::api
