// Logits processors that touch a few entries of a sequence's logits row [vocab] in place. Each
// appends (token, old value) to `undo` before a write, so the caller can restore the raw row
// (raw logprobs are reported; see sampler.h). Applied in this order, as vLLM does: bias, then
// penalties (both OpenAI and TGI apply penalties to the biased logits).
#pragma once

#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "sampling/token_counts.h"

namespace kiln {

using LogitsUndo = std::vector<std::pair<int32_t, float>>;

// OpenAI logit_bias: logit += bias.
void ApplyLogitBias(float* logits, std::span<const std::pair<int32_t, float>> bias,
                    LogitsUndo& undo);

// transformers' RepetitionPenaltyLogitsProcessor (TGI's too) over every token of the prompt and
// the output so far: logit > 0 ? logit / penalty : logit * penalty.
void ApplyRepetitionPenalty(float* logits, const TokenCounts& counts, float penalty,
                            LogitsUndo& undo);

// OpenAI over the generated tokens only: logit -= frequency * count + presence * (count > 0).
void ApplyFrequencyPresencePenalty(float* logits, const TokenCounts& counts, float frequency,
                                   float presence, LogitsUndo& undo);

// logit = -inf (stop tokens while fewer than min_tokens are generated).
void SuppressTokens(float* logits, std::span<const int32_t> ids, LogitsUndo& undo);

// Puts back the values recorded in `undo` (newest first) and clears it.
void RestoreLogits(float* logits, LogitsUndo& undo);

}  // namespace kiln
