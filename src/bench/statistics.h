// Distribution summaries as GuideLLM reports them (schemas/statistics.py): mean, median, mode,
// variance, std_dev, min, max, count, total_sum and the percentiles p0.1 .. p99.9.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>

namespace kiln::bench {

// Percentile levels, in the order of DistributionSummary::percentiles.
inline constexpr std::array<double, 11> kPercentileLevels = {0.001, 0.01, 0.05, 0.10, 0.25, 0.50,
                                                             0.75,  0.90, 0.95, 0.99, 0.999};
// GuideLLM's names for them: p001, p01, ..., p999.
inline constexpr std::array<const char*, 11> kPercentileNames = {
    "p001", "p01", "p05", "p10", "p25", "p50", "p75", "p90", "p95", "p99", "p999"};

struct DistributionSummary {
  double mean = 0, median = 0, mode = 0, variance = 0, std_dev = 0, min = 0, max = 0;
  int64_t count = 0;
  double total_sum = 0;
  std::array<double, 11> percentiles{};  // at kPercentileLevels

  // The percentile at `level` (one of kPercentileLevels); throws kiln::Error otherwise.
  double Percentile(double level) const;
};

// Summary of unweighted values (all zeros when empty). Percentiles are the lower inverse of the
// empirical CDF: the smallest value v with P(X <= v) >= level, i.e. the sorted value at rank
// ceil(level * n). GuideLLM computes the same with searchsorted over the cumulative PDF.
DistributionSummary Summarize(std::span<const double> values);

}  // namespace kiln::bench
