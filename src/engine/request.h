// A generation request as the engine sees it: token ids and parameters, no JSON or HTTP.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "sampling/params.h"  // SamplingParams, StopParams (moved there: sampling consumes them)

namespace kiln {

struct GenerationRequest {
  std::vector<int32_t> prompt;
  SamplingParams sampling;
  StopParams stop;
  bool logprobs = false;  // fill GenerationEvent::logprob (costs a pass over the vocab per token)
  int32_t top_n_tokens = 0;  // alternatives per step (raw logprobs, see sampling/sampler.h)
  int32_t n = 1;             // independent completions (choices), indexed 0..n-1
  bool skip_special_tokens = true;
};

// kEosToken: an eos / end-of-turn id of the tokenizer or one of StopParams::stop_token_ids; that
// token's event carries its id but no text. kStopSequence: the event's text ends before the match.
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
  int32_t choice = 0;     // 0..n-1
  int32_t token_id = -1;  // -1 on a finish-only or error event
  std::string text;       // detokenized bytes this token adds (complete UTF-8 only)
  float logprob = 0.0f;
  bool special = false;
  std::vector<TopToken> top;  // top_n_tokens alternatives
  std::optional<FinishReason> finish;
  std::string error;  // set with FinishReason::kError
  int32_t prompt_tokens = 0;
  int32_t generated_tokens = 0;   // of this choice so far
  int32_t speculated_tokens = 0;  // of those, accepted drafts (TGI's "skipped" tokens)
  uint64_t seed = 0;              // seed actually used (for details)
  // When the choice was first scheduled into a step (its queue time ends there); zero when it
  // never was (refused or cancelled while waiting).
  std::chrono::steady_clock::time_point scheduled{};
};

}  // namespace kiln
