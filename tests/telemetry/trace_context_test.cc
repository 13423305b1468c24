#include "telemetry/trace_context.h"

#include <gtest/gtest.h>

#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace kiln::telemetry {
namespace {

constexpr const char* kValid = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

TEST(Traceparent, ParsesTheSpecExample) {
  const auto c = ParseTraceparent(kValid);
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(Hex(c->trace_id), "4bf92f3577b34da6a3ce929d0e0e4736");
  EXPECT_EQ(Hex(c->parent_span_id), "00f067aa0ba902b7");
  EXPECT_EQ(c->flags, 1);
  EXPECT_TRUE(c->sampled());
}

TEST(Traceparent, KeepsFlagsAsSent) {
  const auto c = ParseTraceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00");
  ASSERT_TRUE(c.has_value());
  EXPECT_FALSE(c->sampled());
  // Unknown flag bits are carried, not refused.
  const auto d = ParseTraceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-fe");
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->flags, 0xfe);
  EXPECT_FALSE(d->sampled());
}

TEST(Traceparent, TrimsOptionalWhitespace) {
  EXPECT_TRUE(ParseTraceparent(std::string(" \t") + kValid + "\t ").has_value());
}

TEST(Traceparent, LaterVersionIsReadByItsFirstFourFields) {
  const std::string base = "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
  EXPECT_TRUE(ParseTraceparent(base).has_value());
  const auto c = ParseTraceparent(base + "-what-the-future-holds");
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(Hex(c->parent_span_id), "00f067aa0ba902b7");
  EXPECT_TRUE(ParseTraceparent("cc" + base.substr(2) + "-x").has_value());
  // A later version's extra part must start with '-'.
  EXPECT_FALSE(ParseTraceparent(base + "x").has_value());
  EXPECT_FALSE(ParseTraceparent(base + "0").has_value());
}

TEST(Traceparent, RefusesEveryMalformedClass) {
  const std::string v = kValid;
  const std::vector<std::string> bad = {
      "",
      "00",
      v.substr(0, 54),                                            // one short
      v + "0",                                                    // version 00: exactly 55
      v + "-00",                                                  // no extra fields in 00
      "ff" + v.substr(2),                                         // version ff
      "0" + v,                                                    // version three digits
      v.substr(1),                                                // version one digit
      "0g" + v.substr(2),                                         // version not hex
      "0A" + v.substr(2),                                         // upper-case version
      "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",  // upper-case trace id
      "00-4bf92f3577b34da6a3ce929d0e0e4736-00F067AA0BA902B7-01",  // upper-case parent id
      "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0A",  // upper-case flags
      "00-00000000000000000000000000000000-00f067aa0ba902b7-01",  // zero trace id
      "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",  // zero parent id
      "00-4bf92f3577b34da6a3ce929d0e0e473z-00f067aa0ba902b7-01",  // non-hex trace id
      "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902bx-01",  // non-hex parent id
      "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0x",  // non-hex flags
      "00_4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",  // bad separators
      "00-4bf92f3577b34da6a3ce929d0e0e4736_00f067aa0ba902b7-01",
      "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7_01",
      "00-4bf92f3577b34da6a3ce929d0e0e47360-0f067aa0ba902b7-01",  // fields shifted
      "00-4bf92f3577b34da6a3ce929d0e0e473-600f067aa0ba902b7-01",
      "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-1",  // flags one digit
      "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-001",
      "00 4bf92f3577b34da6a3ce929d0e0e4736 00f067aa0ba902b7 01",
      "00-+bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
      "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01x-y",  // future: junk at 55
      "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b-701",     // future: bad fields
      std::string(" ") + "\n" + v,                                   // only spaces, tabs are OWS
      v.substr(0, 20) + std::string(1, '\0') + v.substr(21),
      std::string(55, '\x01'),
      std::string(4096, 'a'),
  };
  for (const std::string& h : bad) {
    EXPECT_FALSE(ParseTraceparent(h).has_value()) << "'" << h << "'";
  }
}

TEST(Traceparent, FormatRoundTrips) {
  const TraceId t = NewTraceId();
  const SpanId s = NewSpanId();
  for (const uint8_t flags : {uint8_t{0}, uint8_t{1}, uint8_t{0x80}}) {
    const std::string h = FormatTraceparent(t, s, flags);
    EXPECT_EQ(h.size(), 55u);
    EXPECT_EQ(h.substr(0, 3), "00-");
    const auto c = ParseTraceparent(h);
    ASSERT_TRUE(c.has_value()) << h;
    EXPECT_EQ(c->trace_id, t);
    EXPECT_EQ(c->parent_span_id, s);
    EXPECT_EQ(c->flags, flags);
  }
  const auto spec = ParseTraceparent(kValid);
  ASSERT_TRUE(spec.has_value());
  EXPECT_EQ(FormatTraceparent(spec->trace_id, spec->parent_span_id, spec->flags), kValid);
}

TEST(Hex, LowerCaseFixedWidth) {
  TraceId t{};
  t[0] = 0xab;
  t[15] = 0x01;
  EXPECT_EQ(Hex(t), "ab000000000000000000000000000001");
  SpanId s{};
  s[7] = 0xff;
  EXPECT_EQ(Hex(s), "00000000000000ff");
}

TEST(NewIds, AreNonZeroAndDistinctAcrossThreads) {
  std::mutex mu;
  std::set<std::string> seen;
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      std::vector<std::string> mine;
      for (int i = 0; i < 1000; ++i) {
        const TraceId id = NewTraceId();
        const SpanId s = NewSpanId();
        EXPECT_NE(id, TraceId{});
        EXPECT_NE(s, SpanId{});
        mine.push_back(Hex(id));
      }
      std::lock_guard<std::mutex> lock(mu);
      seen.insert(mine.begin(), mine.end());
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(seen.size(), 4000u);  // per-thread generators are seeded apart
}

}  // namespace
}  // namespace kiln::telemetry
