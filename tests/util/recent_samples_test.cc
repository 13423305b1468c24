#include "util/recent_samples.h"

#include <gtest/gtest.h>

namespace kiln {
namespace {

using Clock = RecentSamples::Clock;
using std::chrono::seconds;

TEST(RecentSamples, NearestRankPercentilesOfTheWindow) {
  RecentSamples r(1000);
  const Clock::time_point t0 = Clock::now();
  for (int i = 1; i <= 100; ++i) r.Observe(i, t0);
  const WindowQuantiles q = r.Quantiles(seconds(60), t0);
  EXPECT_EQ(q.count, 100u);
  EXPECT_DOUBLE_EQ(q.p50, 50.0);
  EXPECT_DOUBLE_EQ(q.p95, 95.0);
}

TEST(RecentSamples, OldSamplesLeaveTheWindow) {
  RecentSamples r(1000);
  const Clock::time_point t0 = Clock::now();
  r.Observe(100.0, t0);
  r.Observe(1.0, t0 + seconds(90));
  const WindowQuantiles q = r.Quantiles(seconds(60), t0 + seconds(100));
  EXPECT_EQ(q.count, 1u);
  EXPECT_DOUBLE_EQ(q.p95, 1.0);
  EXPECT_EQ(r.Quantiles(seconds(60), t0 + seconds(200)).count, 0u);
}

TEST(RecentSamples, AFullRingKeepsTheNewest) {
  RecentSamples r(4);
  const Clock::time_point t0 = Clock::now();
  for (int i = 1; i <= 10; ++i) r.Observe(i, t0);
  const WindowQuantiles q = r.Quantiles(seconds(60), t0);
  EXPECT_EQ(q.count, 4u);
  EXPECT_DOUBLE_EQ(q.p50, 8.0);  // of 7, 8, 9, 10
  EXPECT_DOUBLE_EQ(q.p95, 10.0);
}

}  // namespace
}  // namespace kiln
