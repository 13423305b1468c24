// Prompt-lookup drafting: what follows the nearest earlier occurrence of the longest suffix.
#include "engine/ngram_proposer.h"

#include <gtest/gtest.h>

#include <vector>

namespace kiln {
namespace {

std::vector<int32_t> Propose(const std::vector<int32_t>& history, int32_t k, NgramConfig c = {}) {
  std::vector<int32_t> draft = {99};  // cleared by the call
  ProposeNgram(history, k, c, draft);
  return draft;
}

TEST(NgramProposer, ProposesWhatFollowedTheSuffix) {
  EXPECT_EQ(Propose({1, 2, 3, 4, 5, 9, 2, 3}, 3), (std::vector<int32_t>{4, 5, 9}));
}

TEST(NgramProposer, TheNearestOccurrenceWins) {
  // "7" appears twice before the end; the later one is followed by 8, 8.
  EXPECT_EQ(Propose({7, 1, 1, 7, 8, 8, 0, 7}, 2), (std::vector<int32_t>{8, 8}));
}

TEST(NgramProposer, LongerSuffixesAreTriedFirst) {
  // Suffix (4, 5): its match is followed by 6; the 1-gram (5) alone would pick the nearer 5 -> 0.
  EXPECT_EQ(Propose({4, 5, 6, 3, 5, 0, 4, 5}, 1), (std::vector<int32_t>{6}));
  NgramConfig unigram;
  unigram.max_ngram = 1;
  EXPECT_EQ(Propose({4, 5, 6, 3, 5, 0, 4, 5}, 1, unigram), (std::vector<int32_t>{0}));
}

TEST(NgramProposer, NothingWithoutAMatchOrRoom) {
  EXPECT_TRUE(Propose({1, 2, 3, 4}, 4).empty());
  EXPECT_TRUE(Propose({1}, 4).empty());
  EXPECT_TRUE(Propose({}, 4).empty());
  EXPECT_TRUE(Propose({1, 2, 1}, 0).empty());
  NgramConfig bigram_only;
  bigram_only.min_ngram = 2;
  EXPECT_TRUE(Propose({1, 2, 3, 2}, 2, bigram_only).empty());
}

TEST(NgramProposer, ADraftNeverRunsPastTheHistory) {
  // A period-2 run: the match right before the suffix is followed only by the suffix itself.
  EXPECT_EQ(Propose({1, 2, 1, 2}, 8), (std::vector<int32_t>{1, 2}));
}

TEST(NgramProposer, LookbackBoundsTheSearch) {
  NgramConfig near;
  near.max_lookback = 4;
  EXPECT_TRUE(Propose({5, 6, 0, 0, 0, 0, 0, 1, 5}, 1, near).empty());
  EXPECT_EQ(Propose({5, 6, 0, 0, 0, 0, 0, 1, 5}, 1), (std::vector<int32_t>{6}));
}

}  // namespace
}  // namespace kiln
