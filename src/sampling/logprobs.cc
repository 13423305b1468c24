#include "sampling/logprobs.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace kiln {

float LogSumExp(const float* x, int64_t n) {
  float max = -std::numeric_limits<float>::infinity();
  for (int64_t i = 0; i < n; ++i) max = std::max(max, x[i]);
  if (!std::isfinite(max)) return max;
  double sum = 0;
  for (int64_t i = 0; i < n; ++i) sum += std::exp(x[i] - max);
  return max + static_cast<float>(std::log(sum));
}

void TopLogprobs(const float* x, int64_t n, float log_sum_exp, int32_t k,
                 std::vector<TokenLogprob>& out) {
  out.clear();
  if (k <= 0) return;
  // "a ranks before b": larger logit, then lower id. The heap keeps the worst kept on top.
  auto before = [x](int32_t a, int32_t b) { return x[a] > x[b] || (x[a] == x[b] && a < b); };
  auto heap_cmp = [&](const TokenLogprob& a, const TokenLogprob& b) { return before(a.id, b.id); };
  for (int64_t i = 0; i < n; ++i) {
    const auto id = static_cast<int32_t>(i);
    if (static_cast<int32_t>(out.size()) < k) {
      out.push_back({id, 0.0f});
      std::push_heap(out.begin(), out.end(), heap_cmp);
    } else if (before(id, out.front().id)) {
      std::pop_heap(out.begin(), out.end(), heap_cmp);
      out.back() = {id, 0.0f};
      std::push_heap(out.begin(), out.end(), heap_cmp);
    }
  }
  std::sort_heap(out.begin(), out.end(), heap_cmp);
  for (TokenLogprob& t : out) t.logprob = x[t.id] - log_sum_exp;
}

}  // namespace kiln
