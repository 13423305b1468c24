#include "util/recent_samples.h"

#include <algorithm>
#include <cmath>

namespace kiln {
namespace {

// Nearest rank: the smallest value with at least q of the samples at or below it.
double Rank(std::vector<double>& values, double q) {
  const size_t n = values.size();
  size_t k = static_cast<size_t>(std::ceil(q * static_cast<double>(n)));
  k = std::clamp<size_t>(k, 1, n) - 1;
  std::nth_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(k), values.end());
  return values[k];
}

}  // namespace

RecentSamples::RecentSamples(size_t capacity) : ring_(std::max<size_t>(1, capacity)) {}

void RecentSamples::Observe(double value, Clock::time_point now) {
  std::lock_guard lock(mu_);
  ring_[next_] = {now, value};
  next_ = (next_ + 1) % ring_.size();
  size_ = std::min(size_ + 1, ring_.size());
}

WindowQuantiles RecentSamples::Quantiles(Clock::duration window, Clock::time_point now) const {
  std::vector<double> values;
  {
    std::lock_guard lock(mu_);
    values.reserve(size_);
    const Clock::time_point since = now - window;
    for (size_t i = 0; i < size_; ++i) {
      if (ring_[i].at >= since) values.push_back(ring_[i].value);
    }
  }
  WindowQuantiles q;
  q.count = values.size();
  if (values.empty()) return q;
  q.p50 = Rank(values, 0.50);
  q.p95 = Rank(values, 0.95);
  return q;
}

}  // namespace kiln
