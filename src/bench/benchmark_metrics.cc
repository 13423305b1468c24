#include "bench/benchmark_metrics.h"

#include <algorithm>
#include <functional>
#include <optional>
#include <vector>

namespace kiln::bench {
namespace {

using Extract = std::function<std::optional<double>(const RequestRecord&)>;

StatusDistribution Distribution(std::span<const RequestRecord> records, const Extract& extract) {
  std::vector<double> by_status[3], all;
  for (const RequestRecord& r : records) {
    std::optional<double> v = extract(r);
    if (!v) continue;
    by_status[static_cast<int>(r.status)].push_back(*v);
    all.push_back(*v);
  }
  StatusDistribution d;
  d.successful = Summarize(by_status[static_cast<int>(RequestStatus::kSuccessful)]);
  d.incomplete = Summarize(by_status[static_cast<int>(RequestStatus::kIncomplete)]);
  d.errored = Summarize(by_status[static_cast<int>(RequestStatus::kErrored)]);
  d.total = Summarize(all);
  return d;
}

RequestTotals CountTotals(std::span<const RequestRecord> records) {
  RequestTotals t;
  for (const RequestRecord& r : records) {
    if (r.status == RequestStatus::kSuccessful) ++t.successful;
    if (r.status == RequestStatus::kIncomplete) ++t.incomplete;
    if (r.status == RequestStatus::kErrored) ++t.errored;
  }
  t.total = static_cast<int64_t>(records.size());
  return t;
}

void ComputeRates(std::span<const RequestRecord> records, double start, double end,
                  BenchmarkMetrics& m) {
  m.duration_s = std::max(end - start, 0.0);
  if (m.duration_s <= 0) return;
  double prompt = 0, output = 0, busy = 0;
  for (const RequestRecord& r : records) {
    busy += std::max(0.0, std::min(r.request_end, end) - std::max(r.request_start, start));
    if (r.status != RequestStatus::kSuccessful) continue;
    prompt += static_cast<double>(r.prompt_tokens);
    output += static_cast<double>(r.output_tokens);
  }
  m.requests_per_second = static_cast<double>(m.totals.successful) / m.duration_s;
  m.request_concurrency = busy / m.duration_s;
  m.prompt_tokens_per_second = prompt / m.duration_s;
  m.output_tokens_per_second = output / m.duration_s;
  m.total_tokens_per_second = (prompt + output) / m.duration_s;
}

}  // namespace

BenchmarkMetrics ComputeMetrics(std::span<const RequestRecord> records, double start, double end) {
  BenchmarkMetrics m;
  m.totals = CountTotals(records);
  ComputeRates(records, start, end, m);
  auto count = [](int64_t RequestRecord::*field) {
    return [field](const RequestRecord& r) -> std::optional<double> {
      return static_cast<double>(r.*field);
    };
  };
  m.request_latency_s = Distribution(
      records, [](const RequestRecord& r) -> std::optional<double> { return r.LatencySeconds(); });
  m.ttft_ms = Distribution(records, [](const RequestRecord& r) { return r.TtftMs(); });
  m.itl_ms = Distribution(records, [](const RequestRecord& r) { return r.ItlMs(); });
  m.tpot_ms = Distribution(records, [](const RequestRecord& r) { return r.TpotMs(); });
  m.prompt_tokens = Distribution(records, count(&RequestRecord::prompt_tokens));
  m.output_tokens = Distribution(records, count(&RequestRecord::output_tokens));
  m.total_tokens = Distribution(records, [](const RequestRecord& r) -> std::optional<double> {
    return static_cast<double>(r.prompt_tokens + r.output_tokens);
  });
  m.streaming_iterations = Distribution(records, count(&RequestRecord::content_events));
  return m;
}

}  // namespace kiln::bench
