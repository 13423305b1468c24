#include "telemetry/span_exporter.h"

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "fake_collector.h"
#include "telemetry/otlp_trace.pb.h"
#include "util/error.h"

namespace kiln::telemetry {
namespace {

using std::chrono::milliseconds;
using testing::FakeCollector;
using Clock = std::chrono::steady_clock;

Span NamedSpan(const std::string& name) {
  Span s;
  s.trace_id[0] = 1;
  s.span_id[0] = 2;
  s.name = name;
  s.kind = SpanKind::kServer;
  s.start_unix_nanos = 10;
  s.end_unix_nanos = 20;
  return s;
}

std::vector<Span> Spans(size_t n) {
  std::vector<Span> out;
  for (size_t i = 0; i < n; ++i) out.push_back(NamedSpan("s" + std::to_string(i)));
  return out;
}

ExporterOptions Options(const std::string& endpoint) {
  ExporterOptions o;
  o.endpoint = endpoint;
  o.service_name = "kiln-test";
  o.flush_interval = milliseconds(50);
  o.export_timeout = milliseconds(300);
  return o;
}

// Polls the counters until `done` holds or `timeout`.
template <typename F>
ExporterCounters WaitCounters(const SpanExporter& e, F done,
                              milliseconds timeout = milliseconds(3000)) {
  const auto end = Clock::now() + timeout;
  ExporterCounters c = e.counters();
  while (!done(c) && Clock::now() < end) {
    std::this_thread::sleep_for(milliseconds(5));
    c = e.counters();
  }
  return c;
}

int SpansIn(const FakeCollector::Request& r) {
  otlp::ExportTraceServiceRequest decoded;
  if (!decoded.ParseFromString(r.body)) return -1;
  int n = 0;
  for (const auto& rs : decoded.resource_spans()) {
    for (const auto& ss : rs.scope_spans()) n += ss.spans_size();
  }
  return n;
}

TEST(SpanExporter, SpansArriveAsOtlpProtobufPosts) {
  FakeCollector collector(FakeCollector::Mode::kOk);
  ExporterOptions o = Options(collector.endpoint());
  o.resource_attributes = {{"service.instance.id", std::string("replica-0")}};
  SpanExporter exporter(o);
  exporter.Export({NamedSpan("POST /generate")});

  const auto requests = collector.WaitFor(1, milliseconds(3000));
  ASSERT_EQ(requests.size(), 1u);
  EXPECT_EQ(requests[0].head.rfind("POST /v1/traces HTTP/1.1\r\n", 0), 0u) << requests[0].head;
  EXPECT_NE(requests[0].head.find("Content-Type: application/x-protobuf"), std::string::npos);
  otlp::ExportTraceServiceRequest decoded;
  ASSERT_TRUE(decoded.ParseFromString(requests[0].body));
  const auto& rs = decoded.resource_spans(0);
  EXPECT_EQ(rs.resource().attributes(0).value().string_value(), "kiln-test");
  EXPECT_EQ(rs.resource().attributes(1).value().string_value(), "replica-0");
  ASSERT_EQ(rs.scope_spans(0).spans_size(), 1);
  EXPECT_EQ(rs.scope_spans(0).spans(0).name(), "POST /generate");

  const auto c = WaitCounters(exporter, [](const ExporterCounters& c) { return c.exported == 1; });
  EXPECT_EQ(c.exported, 1u);
  EXPECT_EQ(c.dropped, 0u);
  EXPECT_EQ(c.failed_exports, 0u);
  EXPECT_EQ(c.queued, 0u);
}

TEST(SpanExporter, KeepsAnEndpointsPath) {
  FakeCollector collector(FakeCollector::Mode::kOk);
  SpanExporter exporter(Options(collector.endpoint() + "/otel/v1/traces"));
  exporter.Export({NamedSpan("a")});
  const auto requests = collector.WaitFor(1, milliseconds(3000));
  ASSERT_EQ(requests.size(), 1u);
  EXPECT_EQ(requests[0].head.rfind("POST /otel/v1/traces ", 0), 0u) << requests[0].head;
}

TEST(SpanExporter, SendsFullBatchesAtOnceAndTheRestAfterTheInterval) {
  FakeCollector collector(FakeCollector::Mode::kOk);
  ExporterOptions o = Options(collector.endpoint());
  o.max_batch_spans = 10;
  o.flush_interval = milliseconds(400);
  SpanExporter exporter(o);
  const auto start = Clock::now();
  exporter.Export(Spans(25));
  // Two full batches go without waiting for the interval; the last five wait for it.
  auto requests = collector.WaitFor(2, milliseconds(3000));
  ASSERT_GE(requests.size(), 2u);
  EXPECT_LT(Clock::now() - start, milliseconds(350));
  EXPECT_EQ(SpansIn(requests[0]), 10);
  EXPECT_EQ(SpansIn(requests[1]), 10);
  requests = collector.WaitFor(3, milliseconds(3000));
  ASSERT_EQ(requests.size(), 3u);
  EXPECT_GE(Clock::now() - start, milliseconds(350));
  EXPECT_EQ(SpansIn(requests[2]), 5);
  const auto c = WaitCounters(exporter, [](const ExporterCounters& c) { return c.exported == 25; });
  EXPECT_EQ(c.exported, 25u);
  EXPECT_EQ(c.failed_exports, 0u);
}

TEST(SpanExporter, ServerErrorDropsTheBatch) {
  FakeCollector collector(FakeCollector::Mode::kServerError);
  SpanExporter exporter(Options(collector.endpoint()));
  exporter.Export(Spans(3));
  const auto c = WaitCounters(exporter, [](const ExporterCounters& c) { return c.dropped == 3; });
  EXPECT_EQ(c.dropped, 3u);
  EXPECT_EQ(c.failed_exports, 1u);
  EXPECT_EQ(c.exported, 0u);
  // No retry: the collector saw the batch once.
  std::this_thread::sleep_for(milliseconds(150));
  EXPECT_EQ(collector.WaitFor(2, milliseconds(0)).size(), 1u);
}

TEST(SpanExporter, WarnsAtMostOncePerMinute) {
  FakeCollector collector(FakeCollector::Mode::kServerError);
  ExporterOptions o = Options(collector.endpoint());
  o.max_batch_spans = 1;
  ::testing::internal::CaptureStderr();
  {
    SpanExporter exporter(o);
    exporter.Export(Spans(3));
    const auto c =
        WaitCounters(exporter, [](const ExporterCounters& c) { return c.failed_exports == 3; });
    EXPECT_EQ(c.failed_exports, 3u);
    EXPECT_EQ(c.dropped, 3u);
  }
  const std::string log = ::testing::internal::GetCapturedStderr();
  size_t warnings = 0;
  for (size_t at = log.find("spans dropped"); at != std::string::npos;
       at = log.find("spans dropped", at + 1)) {
    ++warnings;
  }
  EXPECT_EQ(warnings, 1u) << log;
  EXPECT_NE(log.find("HTTP 500"), std::string::npos) << log;
}

TEST(SpanExporter, GarbageAnswerCountsAsFailure) {
  FakeCollector collector(FakeCollector::Mode::kGarbage);
  SpanExporter exporter(Options(collector.endpoint()));
  exporter.Export(Spans(2));
  const auto c =
      WaitCounters(exporter, [](const ExporterCounters& c) { return c.failed_exports == 1; });
  EXPECT_EQ(c.failed_exports, 1u);
  EXPECT_EQ(c.dropped, 2u);
}

TEST(SpanExporter, HungCollectorIsCutOffAtTheExportTimeout) {
  FakeCollector collector(FakeCollector::Mode::kHang);
  SpanExporter exporter(Options(collector.endpoint()));  // export_timeout 300 ms
  const auto start = Clock::now();
  exporter.Export(Spans(4));
  ASSERT_EQ(collector.WaitFor(1, milliseconds(3000)).size(), 1u);
  const auto c =
      WaitCounters(exporter, [](const ExporterCounters& c) { return c.failed_exports == 1; });
  const auto took = Clock::now() - start;
  EXPECT_EQ(c.failed_exports, 1u);
  EXPECT_EQ(c.dropped, 4u);
  EXPECT_GE(took, milliseconds(300));
  EXPECT_LT(took, milliseconds(1500));
}

TEST(SpanExporter, NothingListeningCountsAsFailure) {
  int port;
  {
    FakeCollector gone(FakeCollector::Mode::kOk);  // a port that was free a moment ago
    port = gone.port();
  }
  SpanExporter exporter(Options("http://127.0.0.1:" + std::to_string(port)));
  exporter.Export(Spans(2));
  const auto c =
      WaitCounters(exporter, [](const ExporterCounters& c) { return c.failed_exports == 1; });
  EXPECT_EQ(c.failed_exports, 1u);
  EXPECT_EQ(c.dropped, 2u);
  EXPECT_EQ(c.exported, 0u);
}

TEST(SpanExporter, FullQueueDropsAndExportNeverBlocks) {
  FakeCollector collector(FakeCollector::Mode::kHang);
  ExporterOptions o = Options(collector.endpoint());
  o.max_queue_spans = 100;
  o.max_batch_spans = 10;
  o.export_timeout = milliseconds(2000);
  SpanExporter exporter(o);
  const auto start = Clock::now();
  for (int i = 0; i < 100'000; ++i) exporter.Export({NamedSpan("x")});
  const auto took = Clock::now() - start;
  EXPECT_LT(took, milliseconds(1000));
  const ExporterCounters c = exporter.counters();
  EXPECT_LE(c.queued, 100u);
  // Everything but the queue and (at most) one batch in flight was dropped.
  EXPECT_GE(c.dropped, 100'000u - 100 - 10);
  EXPECT_EQ(c.exported, 0u);
  // Shutdown does not wait for the hung export beyond its deadline.
  const auto stop = Clock::now();
  exporter.Shutdown(milliseconds(200));
  EXPECT_LT(Clock::now() - stop, milliseconds(1000));
  const ExporterCounters after = exporter.counters();
  EXPECT_EQ(after.queued, 0u);
  EXPECT_EQ(after.dropped + after.exported, 100'000u);
}

TEST(SpanExporter, ShutdownFlushesWithinItsDeadlineAndIsIdempotent) {
  FakeCollector collector(FakeCollector::Mode::kOk);
  ExporterOptions o = Options(collector.endpoint());
  o.flush_interval = milliseconds(60'000);  // only Shutdown sends these
  o.max_batch_spans = 4;
  SpanExporter exporter(o);
  exporter.Export(Spans(3));
  std::this_thread::sleep_for(milliseconds(50));
  EXPECT_EQ(exporter.counters().queued, 3u);
  const auto start = Clock::now();
  exporter.Shutdown(milliseconds(2000));
  EXPECT_LT(Clock::now() - start, milliseconds(1000));
  ExporterCounters c = exporter.counters();
  EXPECT_EQ(c.exported, 3u);
  EXPECT_EQ(c.queued, 0u);
  exporter.Shutdown(milliseconds(2000));  // again: nothing to do
  exporter.Export(Spans(2));              // after shutdown: dropped, counted
  c = exporter.counters();
  EXPECT_EQ(c.exported, 3u);
  EXPECT_EQ(c.dropped, 2u);
  EXPECT_EQ(c.queued, 0u);
}

TEST(SpanExporter, ConcurrentShutdownsAreSafe) {
  FakeCollector collector(FakeCollector::Mode::kOk);
  SpanExporter exporter(Options(collector.endpoint()));
  exporter.Export(Spans(5));
  std::thread other([&] { exporter.Shutdown(milliseconds(1000)); });
  exporter.Shutdown(milliseconds(1000));
  other.join();
  EXPECT_EQ(exporter.counters().exported + exporter.counters().dropped, 5u);
}

TEST(SpanExporter, DestructorFlushes) {
  FakeCollector collector(FakeCollector::Mode::kOk);
  {
    ExporterOptions o = Options(collector.endpoint());
    o.flush_interval = milliseconds(60'000);
    SpanExporter exporter(o);
    exporter.Export(Spans(2));
  }
  const auto requests = collector.WaitFor(1, milliseconds(0));
  ASSERT_EQ(requests.size(), 1u);
  EXPECT_EQ(SpansIn(requests[0]), 2);
}

TEST(SpanExporter, RefusesBadEndpoints) {
  for (const char* bad : {"", "https://collector:4318", "grpc://collector:4317",
                          "http://collector:99999", "http://:4318", "http://[::1"}) {
    try {
      SpanExporter exporter(Options(bad));
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("OTLP endpoint"), std::string::npos) << e.what();
    }
  }
  try {
    SpanExporter exporter(Options("https://collector:4318"));
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("https is not supported"), std::string::npos);
  }
}

}  // namespace
}  // namespace kiln::telemetry
