#include "bench/statistics.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "bench/benchmark_metrics.h"

namespace kiln::bench {
namespace {

std::vector<double> Range(int from, int to) {
  std::vector<double> v;
  for (int i = from; i <= to; ++i) v.push_back(i);
  return v;
}

// Values from numpy.percentile(x, q, method="inverted_cdf"), which is GuideLLM's searchsorted
// over the cumulative PDF.
TEST(Statistics, PercentilesOfOneToHundred) {
  std::vector<double> v = Range(1, 100);
  std::reverse(v.begin(), v.end());  // order of input does not matter
  DistributionSummary d = Summarize(v);
  EXPECT_EQ(d.count, 100);
  EXPECT_DOUBLE_EQ(d.mean, 50.5);
  EXPECT_DOUBLE_EQ(d.median, 50);
  EXPECT_DOUBLE_EQ(d.Percentile(0.001), 1);
  EXPECT_DOUBLE_EQ(d.Percentile(0.01), 1);
  EXPECT_DOUBLE_EQ(d.Percentile(0.05), 5);
  EXPECT_DOUBLE_EQ(d.Percentile(0.10), 10);
  EXPECT_DOUBLE_EQ(d.Percentile(0.25), 25);
  EXPECT_DOUBLE_EQ(d.Percentile(0.75), 75);
  EXPECT_DOUBLE_EQ(d.Percentile(0.90), 90);
  EXPECT_DOUBLE_EQ(d.Percentile(0.95), 95);
  EXPECT_DOUBLE_EQ(d.Percentile(0.99), 99);
  EXPECT_DOUBLE_EQ(d.Percentile(0.999), 100);
  EXPECT_DOUBLE_EQ(d.min, 1);
  EXPECT_DOUBLE_EQ(d.max, 100);
  EXPECT_DOUBLE_EQ(d.total_sum, 5050);
  EXPECT_NEAR(d.variance, 833.25, 1e-9);  // population variance of 1..100
  EXPECT_NEAR(d.std_dev, std::sqrt(833.25), 1e-9);
}

TEST(Statistics, PercentilesOfASmallSample) {
  DistributionSummary d = Summarize(std::vector<double>{7, 1, 3, 9, 5});  // sorted 1 3 5 7 9
  EXPECT_DOUBLE_EQ(d.median, 5);
  EXPECT_DOUBLE_EQ(d.Percentile(0.25), 3);  // rank ceil(1.25) = 2
  EXPECT_DOUBLE_EQ(d.Percentile(0.75), 7);  // rank ceil(3.75) = 4
  EXPECT_DOUBLE_EQ(d.Percentile(0.10), 1);
  EXPECT_DOUBLE_EQ(d.Percentile(0.99), 9);
  EXPECT_DOUBLE_EQ(d.mean, 5);
  EXPECT_DOUBLE_EQ(d.variance, 8);
}

TEST(Statistics, ModeIsTheMostFrequentSmallestOnTies) {
  EXPECT_DOUBLE_EQ(Summarize(std::vector<double>{3, 1, 3, 2, 2}).mode, 2);
  EXPECT_DOUBLE_EQ(Summarize(std::vector<double>{4, 4, 4, 1}).mode, 4);
}

TEST(Statistics, EmptyAndSingle) {
  DistributionSummary empty = Summarize(std::vector<double>{});
  EXPECT_EQ(empty.count, 0);
  EXPECT_EQ(empty.mean, 0);
  DistributionSummary one = Summarize(std::vector<double>{42});
  for (double p : one.percentiles) EXPECT_EQ(p, 42);
  EXPECT_EQ(one.std_dev, 0);
}

TEST(Statistics, UnknownPercentileThrows) {
  EXPECT_THROW(Summarize(std::vector<double>{1}).Percentile(0.42), std::exception);
}

RequestRecord Record(int64_t index, RequestStatus status, double start, double first, double last,
                     double end, int64_t out) {
  RequestRecord r;
  r.index = index;
  r.status = status;
  r.request_start = start;
  r.first_token_time = first;
  r.last_token_time = last;
  r.request_end = end;
  r.output_tokens = out;
  r.prompt_tokens = 100;
  return r;
}

TEST(BenchmarkMetrics, RequestDefinitionsFollowGuideLlm) {
  RequestRecord r = Record(0, RequestStatus::kSuccessful, 10.0, 10.2, 11.2, 11.25, 11);
  EXPECT_NEAR(*r.TtftMs(), 200, 1e-9);
  EXPECT_NEAR(*r.ItlMs(), 100, 1e-9);           // 1 s over 10 gaps
  EXPECT_NEAR(*r.TpotMs(), 1200.0 / 11, 1e-9);  // first token included
  EXPECT_NEAR(r.LatencySeconds(), 1.25, 1e-12);
  r.output_tokens = 1;
  EXPECT_FALSE(r.ItlMs().has_value());
  r.first_token_time.reset();
  EXPECT_FALSE(r.TtftMs().has_value());
}

TEST(BenchmarkMetrics, ConsistentWithTheRawRecords) {
  std::vector<RequestRecord> records;
  for (int i = 0; i < 40; ++i) {
    const double start = i * 0.5;
    records.push_back(Record(i, RequestStatus::kSuccessful, start, start + 0.1 + 0.001 * i,
                             start + 0.9, start + 1.0, 10 + i % 5));
  }
  records.push_back(Record(40, RequestStatus::kIncomplete, 20.0, 20.1, 20.3, 20.5, 3));
  RequestRecord failed = Record(41, RequestStatus::kErrored, 20.2, 0, 0, 20.21, 0);
  failed.first_token_time.reset();
  failed.last_token_time.reset();
  records.push_back(failed);

  BenchmarkMetrics m = ComputeMetrics(records, 0.0, 20.5);
  EXPECT_EQ(m.totals.successful, 40);
  EXPECT_EQ(m.totals.incomplete, 1);
  EXPECT_EQ(m.totals.errored, 1);
  EXPECT_EQ(m.totals.total, 42);
  EXPECT_NEAR(m.duration_s, 20.5, 1e-12);
  EXPECT_NEAR(m.requests_per_second, 40 / 20.5, 1e-12);

  std::vector<double> ttft, itl, out;
  double tokens = 0, busy = 0;
  for (const RequestRecord& r : records) {
    busy += r.request_end - r.request_start;
    if (r.status != RequestStatus::kSuccessful) continue;
    ttft.push_back(*r.TtftMs());
    itl.push_back(*r.ItlMs());
    out.push_back(static_cast<double>(r.output_tokens));
    tokens += static_cast<double>(r.output_tokens);
  }
  EXPECT_NEAR(m.output_tokens_per_second, tokens / 20.5, 1e-9);
  EXPECT_NEAR(m.total_tokens_per_second, (tokens + 40 * 100) / 20.5, 1e-9);
  EXPECT_NEAR(m.request_concurrency, busy / 20.5, 1e-9);
  EXPECT_EQ(m.ttft_ms.successful.percentiles, Summarize(ttft).percentiles);
  EXPECT_DOUBLE_EQ(m.ttft_ms.successful.mean, Summarize(ttft).mean);
  EXPECT_DOUBLE_EQ(m.itl_ms.successful.median, Summarize(itl).median);
  EXPECT_DOUBLE_EQ(m.output_tokens.successful.mean, Summarize(out).mean);
  EXPECT_EQ(m.ttft_ms.incomplete.count, 1);
  EXPECT_EQ(m.ttft_ms.errored.count, 0);  // no first token: no TTFT
  EXPECT_EQ(m.request_latency_s.total.count, 42);
}

}  // namespace
}  // namespace kiln::bench
