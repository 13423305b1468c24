// The per-request distributions every report shows, in display order, and the percentile
// columns (GuideLLM's console: mean, median, p1 .. p99).
#pragma once

#include <array>
#include <string>
#include <vector>

#include "bench/benchmark_metrics.h"

namespace kiln::bench {

struct DistributionRow {
  const char* name;  // "Request latency"
  const char* unit;  // "s", "ms", "tokens"
  const char* key;   // short key for CSV columns: "latency_s"
  StatusDistribution BenchmarkMetrics::*field;
  int digits;  // decimals when printed
};

const std::vector<DistributionRow>& DistributionRows();

// Columns of the percentile tables: mean, median, p1, p5, p10, p25, p75, p90, p95, p99.
struct StatColumn {
  const char* name;
  double (*get)(const DistributionSummary&);
};
const std::vector<StatColumn>& StatColumns();

// "2024-05-01 12:34:56" in local time, from Unix seconds.
std::string FormatUnixTime(double unix_seconds);

}  // namespace kiln::bench
