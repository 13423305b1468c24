#include "top/rates.h"

#include <gtest/gtest.h>

#include "top/target_view.h"

namespace kiln::top {
namespace {

StatusSnapshot Snap(double uptime, double cpu0, double cpu1, int64_t generated, int64_t requests) {
  StatusSnapshot s;
  s.uptime_s = uptime;
  s.cores = {{0, cpu0}, {1, cpu1}};
  s.generated_tokens = generated;
  s.prompt_tokens = generated * 2;
  s.generation_requests = requests;
  return s;
}

TEST(Rates, FromDeltasOverTheServersOwnClock) {
  const Rates r = ComputeRates(Snap(10.0, 1.0, 5.0, 100, 4), Snap(12.0, 2.5, 5.2, 160, 8));
  ASSERT_TRUE(r.valid);
  EXPECT_DOUBLE_EQ(r.seconds, 2.0);
  EXPECT_DOUBLE_EQ(r.generated_tokens_per_s, 30.0);
  EXPECT_DOUBLE_EQ(r.prompt_tokens_per_s, 60.0);
  EXPECT_DOUBLE_EQ(r.requests_per_s, 2.0);
  ASSERT_EQ(r.core_utilization_pct.size(), 2u);
  EXPECT_DOUBLE_EQ(r.core_utilization_pct[0], 75.0);
  EXPECT_NEAR(r.core_utilization_pct[1], 10.0, 1e-9);
}

TEST(Rates, UtilizationIsClampedToOneCore) {
  EXPECT_DOUBLE_EQ(UtilizationPct(1.02, 1.0), 100.0);
  EXPECT_DOUBLE_EQ(UtilizationPct(-0.1, 1.0), 0.0);
  EXPECT_DOUBLE_EQ(UtilizationPct(0.5, 0.0), 0.0);
  EXPECT_DOUBLE_EQ(UtilizationPct(0.25, 0.5), 50.0);
}

TEST(Rates, ARestartedServerHasNoRates) {
  const Rates r = ComputeRates(Snap(100.0, 50, 50, 1000, 10), Snap(1.0, 0.1, 0.1, 5, 1));
  EXPECT_FALSE(r.valid);
}

TEST(Rates, ADifferentPoolIsNotRatedAgainstTheOldOne) {
  StatusSnapshot before = Snap(10.0, 1.0, 1.0, 0, 0);
  StatusSnapshot after = Snap(11.0, 9.0, 1.5, 0, 0);
  after.cores[0].id = 7;  // a different core: no delta to take
  const Rates r = ComputeRates(before, after);
  EXPECT_DOUBLE_EQ(r.core_utilization_pct[0], 0.0);
  EXPECT_DOUBLE_EQ(r.core_utilization_pct[1], 50.0);
}

TEST(TargetView, RatesNeedTwoAnswersAndAFailureDropsThem) {
  TargetView t;
  t.Update(Snap(1.0, 0.0, 0.0, 0, 0));
  EXPECT_EQ(t.health, Health::kUp);
  EXPECT_FALSE(t.rates.valid);
  t.Update(Snap(2.0, 0.5, 0.0, 10, 1));
  EXPECT_TRUE(t.rates.valid);
  EXPECT_DOUBLE_EQ(t.rates.generated_tokens_per_s, 10.0);
  t.Fail(Health::kUnreachable, "connection refused");
  EXPECT_EQ(t.health, Health::kUnreachable);
  EXPECT_EQ(t.error, "connection refused");
  EXPECT_FALSE(t.rates.valid);
  EXPECT_TRUE(t.current.has_value());   // the last numbers stay for the screen
  t.Update(Snap(0.5, 0.0, 0.0, 0, 0));  // came back as a new process
  EXPECT_EQ(t.health, Health::kUp);
  EXPECT_TRUE(t.error.empty());
  EXPECT_FALSE(t.rates.valid);
}

}  // namespace
}  // namespace kiln::top
