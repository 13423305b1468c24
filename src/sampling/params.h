// Per-request sampling and stopping parameters (engine/request.h re-exports them: they sit here
// because the sampling layer, below the engine, consumes them).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace kiln {

struct SamplingParams {
  bool do_sample = false;           // false: greedy (argmax) whatever the other fields say
  float temperature = 1.0f;         // > 0
  int32_t top_k = 0;                // 0 = off
  float top_p = 1.0f;               // 1 = off
  float typical_p = 1.0f;           // 1 = off
  float min_p = 0.0f;               // 0 = off
  float repetition_penalty = 1.0f;  // TGI/transformers: divide positive logits, multiply negative
  float frequency_penalty = 0.0f;   // OpenAI: logit -= f * count(token in output)
  float presence_penalty = 0.0f;    // OpenAI: logit -= p * (count > 0)
  std::vector<std::pair<int32_t, float>> logit_bias;
  std::optional<uint64_t> seed;  // same seed = same tokens, whatever the batch
};

struct StopParams {
  int32_t max_new_tokens = 64;
  int32_t min_tokens = 0;  // until this many tokens: stop ids masked, stop sequences ignored
  std::vector<std::string> stop_sequences;  // matched on detokenized text, across tokens
  std::vector<int32_t> stop_token_ids;
  bool ignore_eos = false;
};

// Throw kiln::Error with a user-facing message when a field is out of range.
void ValidateSamplingParams(const SamplingParams& p, int64_t vocab_size);
void ValidateStopParams(const StopParams& p, int64_t vocab_size);

}  // namespace kiln
