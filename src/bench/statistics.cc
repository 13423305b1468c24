#include "bench/statistics.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "util/error.h"

namespace kiln::bench {

double DistributionSummary::Percentile(double level) const {
  for (size_t i = 0; i < kPercentileLevels.size(); ++i) {
    if (std::abs(kPercentileLevels[i] - level) < 1e-12) return percentiles[i];
  }
  throw Error(StrCat("no percentile ", level, " in a distribution summary"));
}

namespace {

// Sorted value at rank ceil(level * n) (1-based). The epsilon keeps exact products such as
// 0.9 * 100 from rounding up a rank through floating-point noise.
double LowerQuantile(const std::vector<double>& sorted, double level) {
  const double n = static_cast<double>(sorted.size());
  int64_t rank = static_cast<int64_t>(std::ceil(level * n - 1e-9));
  rank = std::clamp<int64_t>(rank, 1, static_cast<int64_t>(sorted.size()));
  return sorted[rank - 1];
}

// Most frequent value; the smallest one on ties (values are sorted).
double Mode(const std::vector<double>& sorted) {
  double best = sorted.front();
  size_t best_run = 0;
  for (size_t i = 0; i < sorted.size();) {
    size_t j = i;
    while (j < sorted.size() && sorted[j] == sorted[i]) ++j;
    if (j - i > best_run) {
      best_run = j - i;
      best = sorted[i];
    }
    i = j;
  }
  return best;
}

}  // namespace

DistributionSummary Summarize(std::span<const double> values) {
  DistributionSummary s;
  if (values.empty()) return s;
  std::vector<double> sorted(values.begin(), values.end());
  std::sort(sorted.begin(), sorted.end());
  const double n = static_cast<double>(sorted.size());
  double sum = 0;
  for (double v : sorted) sum += v;
  s.count = static_cast<int64_t>(sorted.size());
  s.mean = sum / n;
  double squares = 0;
  for (double v : sorted) squares += (v - s.mean) * (v - s.mean);
  s.variance = squares / n;  // population variance, as GuideLLM's PDF-weighted one
  s.std_dev = std::sqrt(s.variance);
  s.min = sorted.front();
  s.max = sorted.back();
  s.total_sum = sum;
  s.mode = Mode(sorted);
  for (size_t i = 0; i < kPercentileLevels.size(); ++i) {
    s.percentiles[i] = LowerQuantile(sorted, kPercentileLevels[i]);
  }
  s.median = s.Percentile(0.5);
  return s;
}

}  // namespace kiln::bench
