// Token-level stop rules of one sequence: the length limit, stop token ids (the tokenizer's eos
// and end-of-turn ids unless ignore_eos, plus the request's stop_token_ids) and min_tokens,
// before which stop ids are masked out of sampling (transformers' MinNewTokensLength processor,
// vLLM's min_tokens) rather than ignored after the fact.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "sampling/params.h"

namespace kiln {

class StopCriteria {
 public:
  StopCriteria(const StopParams& params, std::span<const int32_t> eos_ids);

  bool IsStopToken(int32_t token) const;
  bool MinReached(int32_t generated) const { return generated >= min_tokens_; }
  bool LengthReached(int32_t generated) const { return generated >= max_new_tokens_; }
  int32_t TokensLeft(int32_t generated) const { return max_new_tokens_ - generated; }
  // Ids to mask for the next token after `generated` tokens (empty once min_tokens is reached).
  std::span<const int32_t> Suppressed(int32_t generated) const;

 private:
  std::vector<int32_t> stop_ids_;  // sorted, unique
  int32_t max_new_tokens_, min_tokens_;
};

}  // namespace kiln
