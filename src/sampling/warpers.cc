#include "sampling/warpers.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>

namespace kiln {

float TopKThreshold(const float* logits, int64_t n, int32_t k, std::vector<float>& heap) {
  if (k <= 0 || k >= n) return -std::numeric_limits<float>::infinity();
  heap.assign(logits, logits + k);
  std::make_heap(heap.begin(), heap.end(), std::greater<>());  // smallest kept on top
  for (int64_t i = k; i < n; ++i) {
    if (logits[i] > heap.front()) {  // NaN never enters
      std::pop_heap(heap.begin(), heap.end(), std::greater<>());
      heap.back() = logits[i];
      std::push_heap(heap.begin(), heap.end(), std::greater<>());
    }
  }
  return heap.front();
}

double ComputeWeights(std::span<Candidate> c) {
  float max = -std::numeric_limits<float>::infinity();
  for (const Candidate& x : c) max = std::max(max, x.logit);
  double total = 0;
  for (Candidate& x : c) {
    x.weight = std::exp(x.logit - max);
    total += x.weight;
  }
  return total;
}

double SumWeights(std::span<const Candidate> c) {
  double total = 0;
  for (const Candidate& x : c) total += x.weight;
  return total;
}

size_t TopP(std::span<Candidate> c, double total, float top_p) {
  if (top_p >= 1.0f || c.size() <= 1) return c.size();
  auto by_weight = [](const Candidate& a, const Candidate& b) { return a.weight > b.weight; };
  const double limit = static_cast<double>(top_p) * total;
  // Sort only as deep as needed: a peaked distribution reaches top_p within a few tokens.
  for (size_t m = std::min<size_t>(c.size(), 64);; m = std::min(c.size(), m * 8)) {
    std::partial_sort(c.begin(), c.begin() + m, c.end(), by_weight);
    double before = 0;  // mass of the tokens ranked above j
    for (size_t j = 0; j < m; ++j) {
      if (j > 0 && before >= limit) return j;
      before += c[j].weight;
    }
    if (before >= limit || m == c.size()) return m;
  }
}

size_t MinP(std::span<Candidate> c, float min_p) {
  if (min_p <= 0.0f || c.empty()) return c.size();
  float max = 0;
  for (const Candidate& x : c) max = std::max(max, x.weight);
  const float threshold = min_p * max;
  size_t kept = 0;
  for (const Candidate& x : c) {
    if (x.weight >= threshold) c[kept++] = x;  // stable: keeps a sorted prefix sorted
  }
  return kept;
}

size_t TypicalP(std::span<Candidate> c, double total, float mass) {
  if (mass >= 1.0f || c.size() <= 1) return c.size();
  const double log_total = std::log(total);
  double entropy = 0;
  for (const Candidate& x : c) {
    if (x.weight <= 0) continue;  // p log p -> 0 (transformers' nansum)
    const double lp = std::log(static_cast<double>(x.weight)) - log_total;
    entropy -= std::exp(lp) * lp;
  }
  for (Candidate& x : c) {
    const double lp = x.weight > 0 ? std::log(static_cast<double>(x.weight)) - log_total
                                   : -std::numeric_limits<double>::infinity();
    x.key = static_cast<float>(std::fabs(-lp - entropy));
  }
  std::sort(c.begin(), c.end(),
            [](const Candidate& a, const Candidate& b) { return a.key < b.key; });
  // last = number of leading tokens whose cumulative mass is still < mass (transformers' last_ind)
  size_t last = 0;
  double cum = 0;
  for (; last < c.size(); ++last) {
    cum += c[last].weight / total;
    if (cum >= mass) break;
  }
  last = std::min(last, c.size() - 1);
  size_t kept = last + 1;
  while (kept < c.size() && c[kept].key <= c[last].key) ++kept;  // ties stay
  return kept;
}

}  // namespace kiln
