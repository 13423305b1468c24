#include "sampling/sampler.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "sampling/philox.h"
#include "sampling/stop_criteria.h"
#include "util/error.h"

namespace kiln {
namespace {

TEST(Philox, KnownAnswers) {
  // Random123's kat_vectors for philox4x32_10.
  EXPECT_EQ(Philox4x32({0, 0, 0, 0}, {0, 0}),
            (PhiloxBlock{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}));
  EXPECT_EQ(Philox4x32({~0u, ~0u, ~0u, ~0u}, {~0u, ~0u}),
            (PhiloxBlock{0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}));
  EXPECT_EQ(Philox4x32({0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}, {0xa4093822, 0x299f31d0}),
            (PhiloxBlock{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}));
}

TEST(Philox, UniformIsInRangeAndSpreads) {
  double sum = 0;
  for (uint64_t i = 0; i < 10000; ++i) {
    const double u = PhiloxUniform(42, 0, i);
    ASSERT_GE(u, 0.0);
    ASSERT_LT(u, 1.0);
    sum += u;
  }
  EXPECT_NEAR(sum / 10000, 0.5, 0.01);
  EXPECT_NE(PhiloxUniform(42, 0, 0), PhiloxUniform(42, 1, 0));
  EXPECT_NE(PhiloxUniform(42, 0, 0), PhiloxUniform(43, 0, 0));
}

// Draws `n` tokens from a fixed row (as if the model always said the same thing).
std::vector<int32_t> Draws(const SamplingParams& p, std::vector<float> row, int n,
                           uint64_t seed = 1, uint64_t stream = 0) {
  SamplingWorkspace ws(static_cast<int64_t>(row.size()));
  Sampler s(p, seed, stream, {});
  std::vector<int32_t> out;
  for (int i = 0; i < n; ++i) {
    SampleResult r;
    s.Sample(row.data(), static_cast<int64_t>(row.size()), {}, ws, r);
    s.Accept(r.token);
    out.push_back(r.token);
  }
  return out;
}

std::vector<double> Frequencies(const std::vector<int32_t>& draws, size_t vocab) {
  std::vector<double> f(vocab);
  for (int32_t t : draws) f[t] += 1.0 / static_cast<double>(draws.size());
  return f;
}

TEST(Sampler, GreedyTakesTheArgmaxAfterBiasAndPenalties) {
  SamplingParams p;
  std::vector<float> row = {1.0f, 2.0f, 1.5f};
  EXPECT_EQ(Draws(p, row, 1)[0], 1);
  p.logit_bias = {{2, 1.0f}};
  EXPECT_EQ(Draws(p, row, 1)[0], 2);
  p.logit_bias.clear();
  p.repetition_penalty = 4.0f;  // token 1 repeats after the first step: 2 / 4 < 1.5
  EXPECT_EQ(Draws(p, row, 2), (std::vector<int32_t>{1, 2}));
}

TEST(Sampler, TemperatureMatchesSoftmaxFrequencies) {
  SamplingParams p;
  p.do_sample = true;
  p.temperature = 0.5f;
  const std::vector<float> row = {0.0f, 0.5f, 1.0f};
  const auto f = Frequencies(Draws(p, row, 40000), 3);
  double z = 0;
  for (float x : row) z += std::exp(x / 0.5);
  for (int i = 0; i < 3; ++i) EXPECT_NEAR(f[i], std::exp(row[i] / 0.5) / z, 0.01) << i;
}

TEST(Sampler, TopKTopPMinPRestrictTheSupport) {
  SamplingParams p;
  p.do_sample = true;
  const std::vector<float> row = {std::log(0.5f), std::log(0.3f), std::log(0.15f), std::log(0.05f)};
  p.top_k = 2;
  auto f = Frequencies(Draws(p, row, 20000), 4);
  EXPECT_NEAR(f[0], 0.5 / 0.8, 0.015);
  EXPECT_EQ(f[2] + f[3], 0.0);
  p.top_k = 0;
  p.top_p = 0.85f;
  f = Frequencies(Draws(p, row, 20000), 4);
  EXPECT_NEAR(f[2], 0.15 / 0.95, 0.015);
  EXPECT_EQ(f[3], 0.0);
  p.top_p = 1.0f;
  p.min_p = 0.35f;
  f = Frequencies(Draws(p, row, 20000), 4);
  EXPECT_EQ(f[2] + f[3], 0.0);
}

TEST(Sampler, SameSeedSameTokensOtherStreamOtherTokens) {
  SamplingParams p;
  p.do_sample = true;
  std::vector<float> row(50);
  for (int i = 0; i < 50; ++i) row[i] = static_cast<float>(i % 7) * 0.3f;
  const auto a = Draws(p, row, 64, 7, 0);
  EXPECT_EQ(a, Draws(p, row, 64, 7, 0));
  EXPECT_NE(a, Draws(p, row, 64, 7, 1));
  EXPECT_NE(a, Draws(p, row, 64, 8, 0));
}

TEST(Sampler, DrawDependsOnlyOnSeedStreamAndIndex) {
  // A sampler created fresh and fast-forwarded gives the draw of one that lived through it all
  // (what preemption by recompute relies on).
  SamplingParams p;
  p.do_sample = true;
  std::vector<float> row(30, 0.0f);
  const auto all = Draws(p, row, 10, 3);
  Sampler late(p, 3, 0, {});
  for (int i = 0; i < 9; ++i) late.Accept(0);
  SamplingWorkspace ws(30);
  SampleResult r;
  late.Sample(row.data(), 30, {}, ws, r);
  EXPECT_EQ(r.token, all[9]);
}

TEST(Sampler, LogprobsAreOfTheRawDistribution) {
  SamplingParams p;
  p.do_sample = true;
  p.temperature = 0.1f;
  p.logit_bias = {{0, 100.0f}};  // forces token 0
  std::vector<float> row = {0.0f, 1.0f, 2.0f};
  const std::vector<float> original = row;
  SamplingWorkspace ws(3);
  Sampler s(p, 1, 0, {});
  std::vector<TokenLogprob> top;
  SampleResult r;
  r.top = &top;
  SampleOptions o;
  o.logprob = true;
  o.top_n = 2;
  s.Sample(row.data(), 3, o, ws, r);
  const double lse = std::log(1 + std::exp(1.0) + std::exp(2.0));
  EXPECT_EQ(r.token, 0);
  EXPECT_NEAR(r.logprob, -lse, 1e-5);
  ASSERT_EQ(top.size(), 2u);
  EXPECT_EQ(top[0].id, 2);
  EXPECT_NEAR(top[0].logprob, 2.0 - lse, 1e-5);
  EXPECT_EQ(row, original);  // restored
}

TEST(Sampler, SuppressedStopTokensAreNeverDrawn) {
  StopParams sp;
  sp.min_tokens = 3;
  sp.stop_token_ids = {4};
  const std::vector<int32_t> eos = {0};
  StopCriteria stop(sp, eos);
  EXPECT_EQ(stop.Suppressed(0).size(), 2u);
  EXPECT_TRUE(stop.Suppressed(3).empty());
  EXPECT_TRUE(stop.IsStopToken(0) && stop.IsStopToken(4) && !stop.IsStopToken(1));
  sp.ignore_eos = true;
  EXPECT_FALSE(StopCriteria(sp, eos).IsStopToken(0));

  SamplingParams p;
  std::vector<float> row = {9.0f, 1.0f, 0.0f, 0.0f, 8.0f};
  SamplingWorkspace ws(5);
  Sampler s(p, 1, 0, {});
  SampleOptions o;
  o.suppress = stop.Suppressed(0);
  SampleResult r;
  s.Sample(row.data(), 5, o, ws, r);
  EXPECT_EQ(r.token, 1);
}

TEST(SamplingParams, ValidationRejectsOutOfRange) {
  auto bad = [](auto mutate) {
    SamplingParams p;
    mutate(p);
    return [p] { ValidateSamplingParams(p, 10); };
  };
  EXPECT_NO_THROW(bad([](SamplingParams&) {})());
  EXPECT_THROW(bad([](SamplingParams& p) { p.temperature = 0; })(), Error);
  EXPECT_THROW(bad([](SamplingParams& p) { p.top_p = 0; })(), Error);
  EXPECT_THROW(bad([](SamplingParams& p) { p.top_k = -1; })(), Error);
  EXPECT_THROW(bad([](SamplingParams& p) { p.typical_p = 1.5f; })(), Error);
  EXPECT_THROW(bad([](SamplingParams& p) { p.min_p = -0.1f; })(), Error);
  EXPECT_THROW(bad([](SamplingParams& p) { p.repetition_penalty = 0; })(), Error);
  EXPECT_THROW(bad([](SamplingParams& p) { p.logit_bias = {{10, 1.0f}}; })(), Error);
  StopParams s;
  s.stop_sequences = {""};
  EXPECT_THROW(ValidateStopParams(s, 10), Error);
  s.stop_sequences = {"\xC3"};
  EXPECT_THROW(ValidateStopParams(s, 10), Error);
  s.stop_sequences = {"ok"};
  s.max_new_tokens = 0;
  EXPECT_THROW(ValidateStopParams(s, 10), Error);
}


// A constraint's mask: only allowed ids are drawn, greedy takes the best allowed one, the
// caller's row is unchanged and logprobs stay raw.
TEST(Sampler, ConstraintMaskRestrictsEveryChoice) {
  std::vector<float> row(130, 0.0f);
  row[5] = 9.0f;  // the unconstrained favourite, not allowed
  row[70] = 2.0f;
  row[129] = 1.0f;
  std::vector<uint64_t> allowed(3, 0);
  allowed[1] |= uint64_t{1} << (70 - 64);
  allowed[2] |= uint64_t{1} << (129 - 128);
  allowed[0] |= uint64_t{1} << 7;
  const std::vector<float> before = row;
  SamplingWorkspace ws(static_cast<int64_t>(row.size()));
  SampleOptions options;
  options.allowed = allowed;
  options.logprob = true;
  SamplingParams greedy;
  Sampler g(greedy, 1, 0, {});
  SampleResult r;
  g.Sample(row.data(), static_cast<int64_t>(row.size()), options, ws, r);
  EXPECT_EQ(r.token, 70);
  EXPECT_EQ(row, before);
  EXPECT_LT(r.logprob, -6.0f);  // raw: token 5 holds almost all the mass
  SamplingParams sampled;
  sampled.do_sample = true;
  sampled.temperature = 2.0f;
  Sampler s(sampled, 3, 0, {});
  std::vector<int> counts(row.size(), 0);
  for (int i = 0; i < 3000; ++i) {
    s.Sample(row.data(), static_cast<int64_t>(row.size()), options, ws, r);
    s.Accept(r.token);
    ++counts[r.token];
  }
  EXPECT_EQ(counts[70] + counts[129] + counts[7], 3000);
  EXPECT_GT(counts[129], 0);
  EXPECT_GT(counts[7], 0);
}

}  // namespace
}  // namespace kiln
