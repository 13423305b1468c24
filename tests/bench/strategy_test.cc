#include "bench/strategy.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "bench/profile.h"
#include "util/error.h"

namespace kiln::bench {
namespace {

Strategy Open(StrategyKind kind, double rate, uint64_t seed = 42) {
  Strategy s;
  s.kind = kind;
  s.rate = rate;
  s.seed = seed;
  return s;
}

TEST(ArrivalSchedule, ConstantIsEvenlySpacedFromZero) {
  ArrivalSchedule schedule(Open(StrategyKind::kConstant, 4.0));
  for (int i = 0; i < 100; ++i) EXPECT_DOUBLE_EQ(schedule.Next(), i * 0.25);
}

TEST(ArrivalSchedule, PoissonGapsAreExponentialAroundTheRate) {
  const double rate = 20.0;
  ArrivalSchedule schedule(Open(StrategyKind::kPoisson, rate));
  const int n = 20000;
  std::vector<double> gaps;
  double last = 0;
  for (int i = 0; i < n; ++i) {
    const double t = schedule.Next();
    ASSERT_GT(t, last - 1e-12);
    gaps.push_back(t - last);
    last = t;
  }
  double mean = 0, var = 0;
  for (double g : gaps) mean += g / n;
  for (double g : gaps) var += (g - mean) * (g - mean) / n;
  EXPECT_NEAR(mean, 1.0 / rate, 0.03 / rate);     // mean gap = 1 / rate
  EXPECT_NEAR(std::sqrt(var) / mean, 1.0, 0.05);  // exponential: CV = 1
  EXPECT_NEAR(n / last, rate, rate * 0.03);       // realized rate
  int short_gaps = 0;                             // P(gap < mean) = 1 - 1/e
  for (double g : gaps) short_gaps += g < mean;
  EXPECT_NEAR(static_cast<double>(short_gaps) / n, 1 - std::exp(-1.0), 0.02);
}

TEST(ArrivalSchedule, PoissonIsSeeded) {
  ArrivalSchedule a(Open(StrategyKind::kPoisson, 5, 7)), b(Open(StrategyKind::kPoisson, 5, 7));
  ArrivalSchedule c(Open(StrategyKind::kPoisson, 5, 8));
  double x = 0, y = 0, z = 0;
  for (int i = 0; i < 10; ++i) {
    x = a.Next();
    y = b.Next();
    z = c.Next();
  }
  EXPECT_EQ(x, y);
  EXPECT_NE(x, z);
}

TEST(ArrivalSchedule, NeedsAnOpenLoopStrategy) {
  EXPECT_THROW(ArrivalSchedule(Open(StrategyKind::kSynchronous, 1)), Error);
  EXPECT_THROW(ArrivalSchedule(Open(StrategyKind::kConstant, 0)), Error);
}

TEST(Strategy, LabelsAndConcurrencyLimits) {
  Strategy s = Open(StrategyKind::kConstant, 2.5);
  EXPECT_EQ(s.Label(), "constant@2.50");
  s.kind = StrategyKind::kSynchronous;
  EXPECT_EQ(s.Label(), "synchronous");
  EXPECT_EQ(s.ConcurrencyLimit(), 1);
  s.kind = StrategyKind::kConcurrent;
  s.streams = 8;
  EXPECT_EQ(s.Label(), "concurrent@8");
  EXPECT_EQ(s.ConcurrencyLimit(), 8);
  s.kind = StrategyKind::kThroughput;
  s.max_concurrency = 64;
  EXPECT_EQ(s.ConcurrencyLimit(), 64);
}

TEST(Profile, LinspaceMatchesNumpy) {
  EXPECT_EQ(Linspace(1, 5, 5), (std::vector<double>{1, 2, 3, 4, 5}));
  std::vector<double> v = Linspace(0.5, 9.5, 9);  // numpy: step 1.125
  ASSERT_EQ(v.size(), 9u);
  EXPECT_DOUBLE_EQ(v[1], 1.625);
  EXPECT_DOUBLE_EQ(v.back(), 9.5);
}

TEST(Profile, SweepRunsSyncThroughputThenInterpolatedRates) {
  ProfileOptions options;
  options.kind = "sweep";
  Profile profile(options);
  EXPECT_EQ(profile.planned_count(), 10);
  std::vector<double> measured;
  std::optional<Strategy> s = profile.Next(measured);
  ASSERT_TRUE(s);
  EXPECT_EQ(s->kind, StrategyKind::kSynchronous);
  measured.push_back(1.0);
  s = profile.Next(measured);
  EXPECT_EQ(s->kind, StrategyKind::kThroughput);
  measured.push_back(10.0);
  // numpy.linspace(1, 10, 9)[1:] = 2.125, 3.25, ..., 10
  std::vector<double> rates;
  while ((s = profile.Next(measured))) {
    EXPECT_EQ(s->kind, StrategyKind::kConstant);
    rates.push_back(s->rate);
    measured.push_back(s->rate);
  }
  ASSERT_EQ(rates.size(), 8u);
  EXPECT_DOUBLE_EQ(rates.front(), 2.125);
  EXPECT_DOUBLE_EQ(rates[1], 3.25);
  EXPECT_DOUBLE_EQ(rates.back(), 10.0);
}

TEST(Profile, SweepSizeFromRateAndPoissonVariant) {
  ProfileOptions options;
  options.kind = "sweep";
  options.rates = {4};
  options.sweep_strategy = "poisson";
  Profile profile(options);
  EXPECT_EQ(profile.planned_count(), 4);
  std::vector<double> measured = {2.0, 8.0};
  std::optional<Strategy> s = profile.Next(measured);
  EXPECT_EQ(s->kind, StrategyKind::kPoisson);
  EXPECT_DOUBLE_EQ(s->rate, 5.0);  // linspace(2, 8, 3)[1:] = 5, 8
  measured.push_back(5);
  EXPECT_DOUBLE_EQ(profile.Next(measured)->rate, 8.0);
  measured.push_back(8);
  EXPECT_FALSE(profile.Next(measured));
}

TEST(Profile, SweepWithoutAnySuccessFails) {
  ProfileOptions options;
  Profile profile(options);
  EXPECT_THROW(profile.Next({0.0, 0.0}), Error);
}

TEST(Profile, RatedProfilesRunOneBenchmarkPerRate) {
  ProfileOptions options;
  options.kind = "concurrent";
  options.rates = {1, 4};
  Profile profile(options);
  EXPECT_EQ(profile.Next({})->streams, 1);
  EXPECT_EQ(profile.Next({1})->streams, 4);
  EXPECT_FALSE(profile.Next({1, 2}));
}

TEST(Profile, ValidatesOptions) {
  ProfileOptions o;
  o.kind = "bogus";
  EXPECT_THROW(Profile{o}, Error);
  o.kind = "constant";
  EXPECT_THROW(Profile{o}, Error);  // needs --rate
  o.kind = "concurrent";
  o.rates = {1.5};
  EXPECT_THROW(Profile{o}, Error);
  o.kind = "sweep";
  o.rates = {1};
  EXPECT_THROW(Profile{o}, Error);  // size >= 2
}

}  // namespace
}  // namespace kiln::bench
