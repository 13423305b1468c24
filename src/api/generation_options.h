// What a request asks of generation, independent of the route it came by (TGI or OpenAI).
// The server maps it onto the engine's GenerationRequest; api/ knows nothing of the engine.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace kiln::api {

struct GenerationOptions {
  bool do_sample = false;  // false: greedy
  float temperature = 1.0f;
  int32_t top_k = 0;       // 0 = off
  float top_p = 1.0f;      // 1 = off
  float typical_p = 1.0f;  // 1 = off
  float min_p = 0.0f;      // 0 = off
  float repetition_penalty = 1.0f;
  float frequency_penalty = 0.0f;
  float presence_penalty = 0.0f;
  std::vector<std::pair<int32_t, float>> logit_bias;
  std::optional<uint64_t> seed;
  std::optional<int32_t> max_new_tokens;  // unset: what is left of max_total_tokens
  int32_t min_tokens = 0;
  std::vector<std::string> stop;
  std::vector<int32_t> stop_token_ids;
  bool ignore_eos = false;
  bool logprobs = false;
  int32_t top_n_tokens = 0;
  int32_t n = 1;                    // choices (OpenAI n, TGI best_of)
  std::optional<int32_t> truncate;  // keep only the last N prompt tokens
  bool skip_special_tokens = true;
};

}  // namespace kiln::api
