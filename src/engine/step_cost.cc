#include "engine/step_cost.h"

#include <algorithm>

namespace kiln {
namespace {

constexpr double kWeight = 0.2;  // of a new measurement in the average

}  // namespace

StepCost::StepCost() : average_(kMaxTokens + 1, 0.0) {}

void StepCost::Observe(int64_t tokens, double seconds) {
  if (fixed_) seconds = fixed_(tokens);
  if (tokens < 1 || tokens > kMaxTokens || !(seconds > 0.0)) return;
  double& a = average_[tokens];
  a = a == 0.0 ? seconds : (1.0 - kWeight) * a + kWeight * seconds;
}

double StepCost::Estimate(int64_t tokens) const {
  const int64_t m = std::clamp<int64_t>(tokens, 1, kMaxTokens);
  if (average_[m] > 0.0) return average_[m] * static_cast<double>(tokens) / static_cast<double>(m);
  int64_t lo = m - 1, hi = m + 1;
  while (lo >= 1 && average_[lo] == 0.0) --lo;
  while (hi <= kMaxTokens && average_[hi] == 0.0) ++hi;
  const bool has_lo = lo >= 1, has_hi = hi <= kMaxTokens;
  const auto t = static_cast<double>(tokens);
  if (has_lo && has_hi) {
    const double f = static_cast<double>(m - lo) / static_cast<double>(hi - lo);
    return average_[lo] + f * (average_[hi] - average_[lo]);
  }
  if (has_lo) return average_[lo] * t / static_cast<double>(lo);
  if (has_hi) return average_[hi] * t / static_cast<double>(hi);
  return 0.0;
}

}  // namespace kiln
