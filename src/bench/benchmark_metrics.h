// Metrics of one benchmark (one strategy at one rate), computed from its request records with
// GuideLLM's definitions (benchmark/schemas/generative/metrics.py).
#pragma once

#include <cstdint>
#include <span>

#include "bench/request_record.h"
#include "bench/statistics.h"

namespace kiln::bench {

// One summary per request status, plus all of them together.
struct StatusDistribution {
  DistributionSummary successful, incomplete, errored, total;
};

struct RequestTotals {
  int64_t successful = 0, incomplete = 0, errored = 0, total = 0;
};

struct BenchmarkMetrics {
  RequestTotals totals;
  double duration_s = 0;  // measured window: benchmark start to the last end or the cut-off
  // Throughputs count successful requests over the window; concurrency is the mean number of
  // requests in flight (any status) over it.
  double requests_per_second = 0;
  double request_concurrency = 0;
  double prompt_tokens_per_second = 0;
  double output_tokens_per_second = 0;
  double total_tokens_per_second = 0;

  StatusDistribution request_latency_s;
  StatusDistribution ttft_ms;  // time to first token
  StatusDistribution itl_ms;   // inter-token latency (requests with >= 2 output tokens)
  StatusDistribution tpot_ms;  // time per output token, first token included
  StatusDistribution prompt_tokens;
  StatusDistribution output_tokens;
  StatusDistribution total_tokens;
  StatusDistribution streaming_iterations;  // SSE events with content per request
};

// `start` and `end` bound the benchmark on the records' clock.
BenchmarkMetrics ComputeMetrics(std::span<const RequestRecord> records, double start, double end);

}  // namespace kiln::bench
