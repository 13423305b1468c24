// Each logits processor and warper against values computed by hand from transformers' and
// OpenAI's definitions.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>
#include <vector>

#include "sampling/logits_processors.h"
#include "sampling/logprobs.h"
#include "sampling/token_counts.h"
#include "sampling/warpers.h"

namespace kiln {
namespace {

std::vector<Candidate> FromProbs(const std::vector<double>& probs) {
  std::vector<Candidate> c;
  for (size_t i = 0; i < probs.size(); ++i) {
    c.push_back({static_cast<float>(std::log(probs[i])), 0, 0, static_cast<int32_t>(i)});
  }
  return c;
}

std::set<int32_t> Ids(const std::vector<Candidate>& c, size_t n) {
  std::set<int32_t> ids;
  for (size_t i = 0; i < n; ++i) ids.insert(c[i].id);
  return ids;
}

TEST(LogitsProcessors, RepetitionPenaltyOverPromptAndOutput) {
  std::vector<float> x = {2.0f, -1.0f, 0.5f, 3.0f};
  TokenCounts counts;
  counts.AddPrompt(0);
  counts.AddPrompt(1);
  counts.AddGenerated(2);
  LogitsUndo undo;
  ApplyRepetitionPenalty(x.data(), counts, 2.0f, undo);
  EXPECT_EQ(x, (std::vector<float>{1.0f, -2.0f, 0.25f, 3.0f}));
  RestoreLogits(x.data(), undo);
  EXPECT_EQ(x, (std::vector<float>{2.0f, -1.0f, 0.5f, 3.0f}));
}

TEST(LogitsProcessors, FrequencyAndPresenceOverGeneratedOnly) {
  std::vector<float> x = {1.0f, 1.0f, 1.0f, 1.0f};
  TokenCounts counts;
  counts.AddPrompt(0);  // prompt tokens are not penalized (OpenAI)
  counts.AddGenerated(1);
  counts.AddGenerated(1);
  counts.AddGenerated(2);
  LogitsUndo undo;
  ApplyFrequencyPresencePenalty(x.data(), counts, 0.5f, 1.0f, undo);
  EXPECT_EQ(x, (std::vector<float>{1.0f, -1.0f, -0.5f, 1.0f}));  // 1-(0.5*2+1), 1-(0.5+1)
}

TEST(LogitsProcessors, BiasAndSuppressThenRestoreInOrder) {
  std::vector<float> x = {0.0f, 1.0f, 2.0f};
  const std::vector<std::pair<int32_t, float>> bias = {{0, 5.0f}, {2, -1.5f}};
  const std::vector<int32_t> ban = {0};
  LogitsUndo undo;
  ApplyLogitBias(x.data(), bias, undo);
  EXPECT_EQ(x, (std::vector<float>{5.0f, 1.0f, 0.5f}));
  SuppressTokens(x.data(), ban, undo);
  EXPECT_EQ(x[0], -std::numeric_limits<float>::infinity());
  RestoreLogits(x.data(), undo);
  EXPECT_EQ(x, (std::vector<float>{0.0f, 1.0f, 2.0f}));
  EXPECT_TRUE(undo.empty());
}

TEST(Warpers, TopKThresholdIsTheKthLargest) {
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> heap;
  const std::vector<float> x = {1, 3, 2, 2, -inf, 0.5f};
  EXPECT_EQ(TopKThreshold(x.data(), 6, 0, heap), -inf);  // off
  EXPECT_EQ(TopKThreshold(x.data(), 6, 6, heap), -inf);
  EXPECT_EQ(TopKThreshold(x.data(), 6, 1, heap), 3.0f);
  // The 2nd largest is 2, shared by two tokens: >= 2 keeps 3 tokens, as transformers does.
  EXPECT_EQ(TopKThreshold(x.data(), 6, 2, heap), 2.0f);
  EXPECT_EQ(TopKThreshold(x.data(), 6, 4, heap), 1.0f);
  std::vector<float> ascending(1000);
  for (int i = 0; i < 1000; ++i) ascending[i] = static_cast<float>(i);  // worst case for the heap
  EXPECT_EQ(TopKThreshold(ascending.data(), 1000, 10, heap), 990.0f);
}

TEST(Warpers, TopPMatchesTransformersCutoff) {
  // transformers: sort ascending, drop tokens whose cumulative mass <= 1 - top_p.
  // probs .5 .3 .15 .05 -> ascending cumsum .05 .2 .5 1.
  for (auto [top_p, kept] : std::vector<std::pair<float, size_t>>{
           {0.7f, 2}, {0.85f, 3}, {0.99f, 4}, {0.4f, 1}, {0.01f, 1}}) {
    auto c = FromProbs({0.15, 0.5, 0.05, 0.3});
    const double total = ComputeWeights(c);
    const size_t n = TopP(c, total, top_p);
    EXPECT_EQ(n, kept) << top_p;
    EXPECT_EQ(c[0].id, 1);  // kept tokens come sorted, most likely first
  }
}

TEST(Warpers, TopPOnAFlatVocabularyGrowsItsPartialSort) {
  std::vector<Candidate> c(1000);
  for (int i = 0; i < 1000; ++i) c[i] = {0.0f, 0, 0, i};
  const double total = ComputeWeights(c);
  EXPECT_EQ(TopP(c, total, 0.5f), 500u);
}

TEST(Warpers, MinPScalesWithTheTopProbability) {
  auto c = FromProbs({0.5, 0.3, 0.15, 0.05});
  ComputeWeights(c);
  size_t n = MinP(c, 0.35f);  // threshold .175
  EXPECT_EQ(Ids(c, n), (std::set<int32_t>{0, 1}));
  c = FromProbs({0.5, 0.3, 0.15, 0.05});
  ComputeWeights(c);
  EXPECT_EQ(MinP(c, 1.0f), 1u);  // only the top token
}

TEST(Warpers, TypicalPMatchesHandComputedEntropyOrder) {
  // H = 1.14212 nats; |-log p - H| = .449 .0619 .755 1.854 -> order 1, 0, 2, 3 with
  // cumulative mass .3 .8 .95 1; transformers keeps last_ind = #(cum < mass), plus one.
  for (auto [mass, expected] : std::vector<std::pair<float, std::set<int32_t>>>{
           {0.5f, {1, 0}}, {0.9f, {1, 0, 2}}, {0.2f, {1}}, {0.97f, {0, 1, 2, 3}}}) {
    auto c = FromProbs({0.5, 0.3, 0.15, 0.05});
    const double total = ComputeWeights(c);
    const size_t n = TypicalP(c, total, mass);
    EXPECT_EQ(Ids(c, n), expected) << mass;
    EXPECT_EQ(c[0].id, 1);
  }
}

TEST(Logprobs, LogSoftmaxAndTopN) {
  const std::vector<float> x = {1.0f, 3.0f, 2.0f, 3.0f};
  const double lse = std::log(std::exp(1.0) + 2 * std::exp(3.0) + std::exp(2.0));
  EXPECT_NEAR(LogSumExp(x.data(), 4), lse, 1e-6);
  std::vector<TokenLogprob> top;
  TopLogprobs(x.data(), 4, static_cast<float>(lse), 3, top);
  ASSERT_EQ(top.size(), 3u);
  EXPECT_EQ(top[0].id, 1);  // tie at 3.0: lower id first
  EXPECT_EQ(top[1].id, 3);
  EXPECT_EQ(top[2].id, 2);
  EXPECT_NEAR(top[2].logprob, 2.0 - lse, 1e-6);
}

TEST(TokenCounts, GrowsAndKeepsCounts) {
  TokenCounts counts;
  for (int32_t t = 0; t < 1000; ++t) counts.AddGenerated(t * 7919);
  counts.AddGenerated(7919);
  counts.AddPrompt(5);
  EXPECT_EQ(counts.size(), 1001);
  EXPECT_EQ(counts.Find(7919)->generated, 2);
  EXPECT_TRUE(counts.Find(5)->in_prompt);
  EXPECT_EQ(counts.Find(3), nullptr);
  int32_t sum = 0;
  counts.ForEach([&](const TokenCounts::Entry& e) { sum += e.generated; });
  EXPECT_EQ(sum, 1001);
}

}  // namespace
}  // namespace kiln
