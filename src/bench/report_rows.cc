#include "bench/report_rows.h"

#include <ctime>

namespace kiln::bench {

const std::vector<DistributionRow>& DistributionRows() {
  static const std::vector<DistributionRow> rows = {
      {"Request latency", "s", "latency_s", &BenchmarkMetrics::request_latency_s, 3},
      {"Time to first token", "ms", "ttft_ms", &BenchmarkMetrics::ttft_ms, 1},
      {"Inter-token latency", "ms", "itl_ms", &BenchmarkMetrics::itl_ms, 2},
      {"Time per output token", "ms", "tpot_ms", &BenchmarkMetrics::tpot_ms, 2},
      {"Prompt tokens", "tokens", "prompt_tokens", &BenchmarkMetrics::prompt_tokens, 1},
      {"Output tokens", "tokens", "output_tokens", &BenchmarkMetrics::output_tokens, 1},
  };
  return rows;
}

namespace {

template <size_t I>
double At(const DistributionSummary& d) {
  return d.percentiles[I];
}

}  // namespace

const std::vector<StatColumn>& StatColumns() {
  // Indexes into kPercentileLevels: 1 = p1, 2 = p5, 3 = p10, 4 = p25, 6 = p75, ... 9 = p99.
  static const std::vector<StatColumn> columns = {
      {"mean", [](const DistributionSummary& d) { return d.mean; }},
      {"median", [](const DistributionSummary& d) { return d.median; }},
      {"p1", &At<1>},
      {"p5", &At<2>},
      {"p10", &At<3>},
      {"p25", &At<4>},
      {"p75", &At<6>},
      {"p90", &At<7>},
      {"p95", &At<8>},
      {"p99", &At<9>},
  };
  return columns;
}

std::string FormatUnixTime(double unix_seconds) {
  const std::time_t t = static_cast<std::time_t>(unix_seconds);
  std::tm tm{};
  localtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S", &tm);
  return buf;
}

}  // namespace kiln::bench
