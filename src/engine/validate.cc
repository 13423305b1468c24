#include "engine/validate.h"

#include "util/error.h"

namespace kiln {

void ValidateRequest(const GenerationRequest& r, const RequestLimits& limits) {
  KILN_CHECK(!r.prompt.empty(), "the prompt must contain at least one token");
  for (int32_t t : r.prompt) {
    KILN_CHECK(t >= 0 && t < limits.vocab_size, "prompt token id ", t,
               " is outside the vocabulary (", limits.vocab_size, " tokens)");
  }
  KILN_CHECK(r.n >= 1 && r.n <= kMaxChoices, "`n` must be between 1 and ", kMaxChoices);
  KILN_CHECK(r.top_n_tokens >= 0 && r.top_n_tokens <= limits.vocab_size,
             "`top_n_tokens` must be between 0 and the vocabulary size");
  ValidateSamplingParams(r.sampling, limits.vocab_size);
  ValidateStopParams(r.stop, limits.vocab_size);
  KILN_CHECK(r.stop.stop_sequences.empty() || limits.has_tokenizer,
             "stop sequences need a tokenizer");

  const int64_t input = static_cast<int64_t>(r.prompt.size());
  const int64_t total = input + r.stop.max_new_tokens;
  KILN_CHECK(total <= limits.max_context,
             "`inputs` tokens + `max_new_tokens` must be <= ", limits.max_context,
             ". Given: ", input, " `inputs` tokens and ", r.stop.max_new_tokens,
             " `max_new_tokens`");
  // KV holds every position but the last generated token's (it is never fed back).
  const int64_t blocks = (total - 1 + limits.block_size - 1) / limits.block_size;
  KILN_CHECK(blocks <= limits.num_blocks, "`inputs` tokens + `max_new_tokens` need ", blocks,
             " KV blocks of ", limits.block_size, " tokens but the KV cache holds only ",
             limits.num_blocks, " (", limits.num_blocks * limits.block_size, " tokens)");
}

}  // namespace kiln
