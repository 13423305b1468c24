// The HTTP client and the benchmark runner end to end against an in-process fake server.
#include <gtest/gtest.h>

#include <algorithm>
#include <boost/asio/io_context.hpp>
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "bench/benchmark_runner.h"
#include "bench/model_discovery.h"
#include "bench/statistics.h"
#include "fake_openai_server.h"
#include "http/client/http_client.h"

namespace kiln::bench {
namespace {

using std::chrono::milliseconds;
using testing::FakeOpenAiServer;
using testing::FakeServerConfig;

struct Harness {
  Harness(const FakeOpenAiServer& server, int output_tokens)
      : client(io, http::ParseUrl(server.url())),
        runner(io, client, Maker(output_tokens), http::Clock::now()) {}

  static RequestMaker Maker(int output_tokens) {
    return [output_tokens](int64_t index, RequestRecord& record) {
      record.requested_output_tokens = output_tokens;
      http::ClientRequest request;
      request.target = "/v1/completions";
      request.body = nlohmann::json{
          {"model", "m"},
          {"prompt", "p" + std::to_string(index)},
          {"max_tokens", output_tokens},
          {"stream",
           true}}.dump();
      request.headers = {{"Content-Type", "application/json"}};
      return request;
    };
  }

  BenchmarkResult Run(StrategyKind kind, double rate, RunLimits limits, int64_t cap = 10240) {
    Strategy s;
    s.kind = kind;
    s.rate = rate;
    s.streams = static_cast<int64_t>(rate);
    s.max_concurrency = cap;
    return runner.Run(s, limits);
  }

  boost::asio::io_context io;
  http::HttpClient client;
  BenchmarkRunner runner;
};

int64_t CountStatus(const BenchmarkResult& r, RequestStatus status) {
  return std::count_if(r.records.begin(), r.records.end(),
                       [status](const RequestRecord& x) { return x.status == status; });
}

TEST(HttpClient, BodyArrivesIncrementallyWithTimestamps) {
  FakeServerConfig config;
  config.ttft = milliseconds(60);
  config.itl = milliseconds(40);
  FakeOpenAiServer server(config);
  boost::asio::io_context io;
  http::HttpClient client(io, http::ParseUrl(server.url()));
  std::vector<http::Clock::time_point> arrivals;
  http::StreamOutcome outcome;
  int status = 0;
  http::ClientRequest request;
  request.target = "/v1/completions";
  request.body = R"({"prompt":"x","max_tokens":5,"stream":true})";
  const auto start = http::Clock::now();
  client.Start(request,
               {[&](int s, http::Clock::time_point) { status = s; },
                [&](std::string_view, http::Clock::time_point t) { arrivals.push_back(t); },
                [&](const http::StreamOutcome& o) { outcome = o; },
                nullptr});
  io.run();
  EXPECT_EQ(status, 200);
  EXPECT_EQ(outcome.end, http::StreamEnd::kComplete);
  ASSERT_GE(arrivals.size(), 5u);  // one piece per token at least, the tail may coalesce
  const double first_ms = std::chrono::duration<double, std::milli>(arrivals[0] - start).count();
  EXPECT_GE(first_ms, 55);
  EXPECT_LT(first_ms, 500);
  for (size_t i = 1; i < 5; ++i) {
    const double gap =
        std::chrono::duration<double, std::milli>(arrivals[i] - arrivals[i - 1]).count();
    EXPECT_NEAR(gap, 40, 30) << i;  // generous: sanitizer builds on busy machines
  }
  EXPECT_EQ(client.active(), 0u);
  EXPECT_EQ(client.idle_connections(), 1u);  // kept alive
}

TEST(BenchmarkRunner, SynchronousOneAtATimeOnOneKeptAliveConnection) {
  FakeServerConfig config;
  config.ttft = milliseconds(30);
  config.itl = milliseconds(10);
  FakeOpenAiServer server(config);
  Harness h(server, 6);
  BenchmarkResult r = h.Run(StrategyKind::kSynchronous, 0, {0, 5, 0});
  ASSERT_EQ(r.records.size(), 5u);
  EXPECT_EQ(CountStatus(r, RequestStatus::kSuccessful), 5);
  for (size_t i = 1; i < r.records.size(); ++i) {
    EXPECT_GE(r.records[i].request_start, r.records[i - 1].request_end);
  }
  for (const RequestRecord& rec : r.records) {
    EXPECT_EQ(rec.output_tokens, 6);
    EXPECT_TRUE(rec.usage_reported);
    EXPECT_EQ(rec.prompt_tokens, 11);
    EXPECT_GE(*rec.TtftMs(), 25);
    EXPECT_NEAR(*rec.ItlMs(), 10, 8);
  }
  EXPECT_EQ(h.client.connections_opened(), 1u);
  EXPECT_EQ(server.connections_accepted(), 1);
}

TEST(BenchmarkRunner, HundredsOfConcurrentStreams) {
  http::RaiseOpenFileLimit();
  FakeServerConfig config;
  config.ttft = milliseconds(300);
  config.itl = milliseconds(20);
  FakeOpenAiServer server(config);
  Harness h(server, 4);
  // KILN_BENCH_STREAMS raises the count for a manual stress run (e.g. 3000).
  const char* env = std::getenv("KILN_BENCH_STREAMS");
  const int n = env ? std::atoi(env) : 300;
  BenchmarkResult r = h.Run(StrategyKind::kThroughput, 0, {30, n, 0}, n);
  EXPECT_EQ(CountStatus(r, RequestStatus::kSuccessful), n);
  // Requests in flight at once, from the records: all of them, with a 300 ms first token.
  std::vector<std::pair<double, int>> edges;
  for (const RequestRecord& rec : r.records) {
    edges.emplace_back(rec.request_start, 1);
    edges.emplace_back(rec.request_end, -1);
  }
  std::sort(edges.begin(), edges.end());
  int in_flight = 0, peak = 0;
  for (const auto& edge : edges) peak = std::max(peak, in_flight += edge.second);
  EXPECT_EQ(peak, n);
  EXPECT_GE(server.peak_streams(), n / 2);  // the thread-per-connection server lags a little
  EXPECT_EQ(server.requests_served(), n);
  for (const RequestRecord& rec : r.records) EXPECT_EQ(rec.output_tokens, 4);
}

TEST(BenchmarkRunner, MaxSecondsEndsTheRunAndCutsStreamsAsIncomplete) {
  FakeServerConfig config;
  config.ttft = milliseconds(10);
  config.itl = milliseconds(10);
  FakeOpenAiServer server(config);
  Harness h(server, 1000);  // 10 s streams
  const auto wall = http::Clock::now();
  BenchmarkResult r = h.Run(StrategyKind::kConcurrent, 3, {0.6, 0, 0});
  const double took = std::chrono::duration<double>(http::Clock::now() - wall).count();
  EXPECT_LT(took, 2.0);
  ASSERT_EQ(r.records.size(), 3u);
  EXPECT_EQ(CountStatus(r, RequestStatus::kIncomplete), 3);
  EXPECT_NEAR(r.end - r.start, 0.6, 0.25);
  for (const RequestRecord& rec : r.records) {
    EXPECT_GT(rec.content_events, 5);  // partial output counted
    EXPECT_NEAR(rec.request_end, r.end, 0.1);
  }
  EXPECT_EQ(h.client.active(), 0u);
  // The next benchmark on the same client works (and its sockets are new: cut ones are closed).
  BenchmarkResult next = h.Run(StrategyKind::kSynchronous, 0, {0.3, 0, 0});
  EXPECT_EQ(CountStatus(next, RequestStatus::kIncomplete), 1);
  EXPECT_EQ(next.records.front().index, 3);  // data indexes continue across benchmarks
}

TEST(BenchmarkRunner, ConstantRateSendsOnSchedule) {
  FakeServerConfig config;
  config.ttft = milliseconds(2);
  config.itl = milliseconds(1);
  FakeOpenAiServer server(config);
  Harness h(server, 2);
  BenchmarkResult r = h.Run(StrategyKind::kConstant, 20, {0, 20, 0});
  ASSERT_EQ(r.records.size(), 20u);
  std::vector<double> delays_ms;
  for (size_t i = 0; i < r.records.size(); ++i) {
    EXPECT_NEAR(r.records[i].scheduled_time, r.start + 0.05 * static_cast<double>(i), 1e-9);
    delays_ms.push_back((r.records[i].request_start - r.records[i].scheduled_time) * 1000);
  }
  DistributionSummary d = Summarize(delays_ms);
  EXPECT_GE(d.min, -0.5);
  EXPECT_LT(d.median, 20);
  EXPECT_LT(d.max, 150);
  EXPECT_EQ(CountStatus(r, RequestStatus::kSuccessful), 20);
}

TEST(BenchmarkRunner, OpenLoopQueuesAtTheConcurrencyCap) {
  FakeServerConfig config;
  config.ttft = milliseconds(200);
  FakeOpenAiServer server(config);
  Harness h(server, 1);
  BenchmarkResult r = h.Run(StrategyKind::kConstant, 100, {0, 6, 0}, 2);
  ASSERT_EQ(r.records.size(), 6u);
  EXPECT_EQ(CountStatus(r, RequestStatus::kSuccessful), 6);
  EXPECT_LE(server.peak_streams(), 2);
  // Requests 2.. waited for a slot: sent well after their scheduled time.
  EXPECT_GT(r.records[5].request_start - r.records[5].scheduled_time, 0.3);
}

TEST(BenchmarkRunner, HttpErrorsAreRecordedAndMaxErrorsStops) {
  FakeServerConfig config;
  config.status = 429;
  FakeOpenAiServer server(config);
  Harness h(server, 4);
  BenchmarkResult r = h.Run(StrategyKind::kConcurrent, 2, {5, 0, 10});
  EXPECT_GE(CountStatus(r, RequestStatus::kErrored), 10);
  EXPECT_LT(r.end - r.start, 4);
  auto failed = std::find_if(r.records.begin(), r.records.end(), [](const RequestRecord& x) {
    return x.status == RequestStatus::kErrored;
  });
  ASSERT_NE(failed, r.records.end());
  EXPECT_NE(failed->error.find("HTTP 429"), std::string::npos) << failed->error;
  EXPECT_NE(failed->error.find("fake overload"), std::string::npos);
  EXPECT_EQ(failed->http_status, 429);
}

TEST(BenchmarkRunner, NoSpaceFramingAndNoUsageCountsContentEvents) {
  FakeServerConfig config;
  config.space_after_colon = false;
  config.send_usage = false;
  config.ttft = milliseconds(1);
  config.itl = milliseconds(1);
  FakeOpenAiServer server(config);
  Harness h(server, 7);
  BenchmarkResult r = h.Run(StrategyKind::kSynchronous, 0, {0, 2, 0});
  ASSERT_EQ(CountStatus(r, RequestStatus::kSuccessful), 2);
  EXPECT_EQ(r.records[0].output_tokens, 7);
  EXPECT_FALSE(r.records[0].usage_reported);
}

TEST(BenchmarkRunner, ServerClosingIdleConnectionsIsRetriedTransparently) {
  FakeServerConfig config;
  config.close_after_response = true;
  config.ttft = milliseconds(1);
  config.itl = milliseconds(1);
  FakeOpenAiServer server(config);
  Harness h(server, 2);
  BenchmarkResult r = h.Run(StrategyKind::kSynchronous, 0, {0, 5, 0});
  EXPECT_EQ(CountStatus(r, RequestStatus::kSuccessful), 5);
  EXPECT_EQ(server.connections_accepted(), 5);
}

TEST(BenchmarkRunner, NeedsALimit) {
  FakeOpenAiServer server;
  Harness h(server, 1);
  EXPECT_THROW(h.Run(StrategyKind::kSynchronous, 0, {0, 0, 0}), std::exception);
}

TEST(ModelDiscovery, FirstModelOfTheList) {
  FakeOpenAiServer server;
  boost::asio::io_context io;
  http::HttpClient client(io, http::ParseUrl(server.url()));
  DiscoveryResult d = DiscoverModel(io, client, "/v1/models", {});
  EXPECT_TRUE(d.reachable);
  EXPECT_EQ(d.model, "fake-model");
}

TEST(HttpClient, UnreachableTargetFailsFast) {
  uint16_t port;
  {
    FakeOpenAiServer server;  // take a free port, then close it
    port = server.port();
  }
  boost::asio::io_context io;
  http::HttpClient client(io, http::ParseUrl("http://127.0.0.1:" + std::to_string(port)));
  DiscoveryResult d = DiscoverModel(io, client, "/v1/models", {});
  EXPECT_FALSE(d.reachable);
  EXPECT_NE(d.error.find("connect"), std::string::npos);
}

}  // namespace
}  // namespace kiln::bench
