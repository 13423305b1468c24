// A generation request as the engine sees it: token ids and parameters, no JSON or HTTP.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace kiln {

struct SamplingParams {
  bool do_sample = false;     // false: greedy (argmax) whatever the other fields say
  float temperature = 1.0f;   // > 0
  int32_t top_k = 0;          // 0 = off
  float top_p = 1.0f;         // 1 = off
  float typical_p = 1.0f;     // 1 = off
  float min_p = 0.0f;         // 0 = off
  float repetition_penalty = 1.0f;  // TGI/transformers: divide positive logits, multiply negative
  float frequency_penalty = 0.0f;   // OpenAI: logit -= f * count(token in output)
  float presence_penalty = 0.0f;    // OpenAI: logit -= p * (count > 0)
  std::vector<std::pair<int32_t, float>> logit_bias;
  std::optional<uint64_t> seed;  // same seed = same tokens, whatever the batch
};

struct StopParams {
  int32_t max_new_tokens = 64;
  int32_t min_tokens = 0;  // eos and stop sequences are ignored before this many tokens
  std::vector<std::string> stop_sequences;  // matched on detokenized text, across tokens
  std::vector<int32_t> stop_token_ids;
  bool ignore_eos = false;
};

struct GenerationRequest {
  std::vector<int32_t> prompt;
  SamplingParams sampling;
  StopParams stop;
  bool logprobs = false;   // fill TokenEvent::logprob (always computed cheaply anyway)
  int32_t top_n_tokens = 0;  // alternatives per step
  int32_t n = 1;           // independent completions (choices), indexed 0..n-1
  bool skip_special_tokens = true;
};

enum class FinishReason { kLength, kEosToken, kStopSequence, kCancelled, kError };

const char* FinishReasonName(FinishReason r);  // "length", "eos_token", "stop_sequence", ...

struct TopToken {
  int32_t id = 0;
  float logprob = 0.0f;
  std::string text;
  bool special = false;
};

// One event per generated token of one choice; the last event of a choice has `finish` set.
struct GenerationEvent {
  int32_t choice = 0;           // 0..n-1
  int32_t token_id = -1;        // -1 on a finish-only or error event
  std::string text;             // detokenized bytes this token adds (complete UTF-8 only)
  float logprob = 0.0f;
  bool special = false;
  std::vector<TopToken> top;    // top_n_tokens alternatives
  std::optional<FinishReason> finish;
  std::string error;            // set with FinishReason::kError
  int32_t prompt_tokens = 0;
  int32_t generated_tokens = 0;  // of this choice so far
  uint64_t seed = 0;             // seed actually used (for details)
};

}  // namespace kiln
