// Log-probabilities of a raw logits row: log_softmax(x)[i] = x[i] - logsumexp(x).
#pragma once

#include <cstdint>
#include <vector>

namespace kiln {

struct TokenLogprob {
  int32_t id = 0;
  float logprob = 0.0f;
};

float LogSumExp(const float* x, int64_t n);

// The k most likely tokens of `x`, most likely first (ties: lower id first), in one pass with a
// k-entry heap. `out` is reused.
void TopLogprobs(const float* x, int64_t n, float log_sum_exp, int32_t k,
                 std::vector<TokenLogprob>& out);

}  // namespace kiln
