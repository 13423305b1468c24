#include "kv/kv_cache_manager.h"

#include <gtest/gtest.h>

#include <numeric>
#include <vector>

namespace kiln {
namespace {

constexpr int32_t kBs = 4;

std::vector<int32_t> Iota(int32_t n, int32_t first = 100) {
  std::vector<int32_t> t(n);
  std::iota(t.begin(), t.end(), first);
  return t;
}

// Admits a sequence and computes it fully (as if a forward pass ran), committing its blocks.
int64_t RunWhole(KvCacheManager& kv, const std::vector<int32_t>& tokens, BlockTable& table) {
  auto cached = kv.Admit(tokens, 1 << 20, table);
  EXPECT_TRUE(cached.has_value());
  kv.Commit(table, tokens, static_cast<int64_t>(tokens.size()));
  return cached.value_or(-1);
}

TEST(KvCacheManager, ReserveGrowsLazilyAndFailsWithoutSideEffects) {
  KvCacheManager kv(4, kBs, true);
  BlockTable t;
  ASSERT_TRUE(kv.Reserve(t, 1));
  EXPECT_EQ(t.blocks.size(), 1u);
  ASSERT_TRUE(kv.Reserve(t, 4));
  EXPECT_EQ(t.blocks.size(), 1u);
  ASSERT_TRUE(kv.Reserve(t, 5));
  EXPECT_EQ(t.blocks.size(), 2u);
  EXPECT_FALSE(kv.Reserve(t, 17));  // needs 5 blocks of 4
  EXPECT_EQ(t.blocks.size(), 2u);
  EXPECT_EQ(kv.num_used_blocks(), 2);
  kv.Release(t);
  EXPECT_EQ(kv.num_used_blocks(), 0);
  EXPECT_TRUE(t.blocks.empty());
}

TEST(KvCacheManager, PrefixHitsReuseFullBlocksOnly) {
  KvCacheManager kv(16, kBs, true);
  const auto prompt = Iota(10);  // 2 full blocks + 2 tokens
  BlockTable a;
  EXPECT_EQ(RunWhole(kv, prompt, a), 0);
  EXPECT_EQ(kv.prefix_hits(), 0);

  BlockTable b;
  EXPECT_EQ(RunWhole(kv, prompt, b), 8);  // both full blocks, shared
  EXPECT_EQ(kv.prefix_hits(), 2);
  EXPECT_EQ(b.blocks[0], a.blocks[0]);
  EXPECT_EQ(b.blocks[1], a.blocks[1]);
  EXPECT_NE(b.blocks[2], a.blocks[2]);  // the partial block is private
  EXPECT_EQ(kv.pool().ref_count(a.blocks[0]), 2);

  auto other = prompt;
  other[5] = 7;  // differs inside block 1: only block 0 matches
  BlockTable c;
  EXPECT_EQ(RunWhole(kv, other, c), 4);
  EXPECT_EQ(kv.prefix_hits(), 3);
  kv.Release(a);
  kv.Release(b);
  kv.Release(c);
  EXPECT_EQ(kv.num_used_blocks(), 0);
  kv.pool().CheckInvariants();
}

TEST(KvCacheManager, AlwaysLeavesTheLastTokenToCompute) {
  KvCacheManager kv(16, kBs, true);
  const auto prompt = Iota(8);  // exactly 2 blocks
  BlockTable a, b;
  RunWhole(kv, prompt, a);
  // A full hit would leave nothing to run for logits: the last block is recomputed.
  EXPECT_EQ(RunWhole(kv, prompt, b), 4);
  kv.Release(a);
  kv.Release(b);
}

TEST(KvCacheManager, ReleasedBlocksStayCachedUntilEvicted) {
  KvCacheManager kv(4, kBs, true);
  const auto p1 = Iota(9, 0), p2 = Iota(9, 50);
  BlockTable a;
  RunWhole(kv, p1, a);  // 3 blocks, 2 registered
  kv.Release(a);
  EXPECT_EQ(kv.num_cached_blocks(), 2);
  EXPECT_EQ(kv.num_free_blocks(), 4);
  BlockTable b;
  RunWhole(kv, p1, b);  // hit after release
  EXPECT_EQ(kv.prefix_hits(), 2);
  kv.Release(b);
  BlockTable c;
  RunWhole(kv, p2, c);  // 3 blocks: 2 clean, then one eviction
  EXPECT_EQ(kv.num_cached_blocks(), 1);
  kv.Release(c);
  // Release went tail-first, so p1's head block (block 0) survived over its tail block.
  BlockTable d;
  EXPECT_EQ(RunWhole(kv, p1, d), 4);
  kv.Release(d);
  kv.pool().CheckInvariants();
}

TEST(KvCacheManager, AdmitCountsRevivedBlocksAgainstFreeSpace) {
  KvCacheManager kv(3, kBs, true);
  const auto p = Iota(9);
  BlockTable a;
  RunWhole(kv, p, a);
  kv.Release(a);           // 2 cached + 1 clean = 3 free
  auto longer = Iota(13);  // shares p's 2 full blocks, needs 4 blocks in all
  BlockTable b;
  EXPECT_FALSE(kv.Admit(longer, 1 << 20, b).has_value());
  EXPECT_TRUE(b.blocks.empty());
  EXPECT_EQ(kv.prefix_hits(), 0);
  EXPECT_EQ(kv.num_cached_blocks(), 2);  // nothing was taken
  // A smaller chunk fits: 2 cached + 1 new.
  auto cached = kv.Admit(longer, 4, b);
  ASSERT_TRUE(cached.has_value());
  EXPECT_EQ(*cached, 8);
  EXPECT_EQ(b.blocks.size(), 3u);
  kv.Release(b);
  kv.pool().CheckInvariants();
}

TEST(KvCacheManager, CommitRegistersGeneratedBlocksIncrementally) {
  KvCacheManager kv(8, kBs, true);
  auto tokens = Iota(3);
  BlockTable a;
  ASSERT_TRUE(kv.Admit(tokens, 100, a).has_value());
  kv.Commit(a, tokens, 3);
  EXPECT_EQ(a.num_hashed, 0);
  for (int i = 0; i < 6; ++i) {  // decode: one token per step
    tokens.push_back(200 + i);
    ASSERT_TRUE(kv.Reserve(a, static_cast<int64_t>(tokens.size())));
    kv.Commit(a, tokens, static_cast<int64_t>(tokens.size()));
  }
  EXPECT_EQ(a.num_hashed, 2);
  kv.Release(a);
  BlockTable b;
  tokens.push_back(1);
  EXPECT_EQ(*kv.Admit(tokens, 100, b), 8);  // a resumed (preempted) sequence recomputes less
  kv.Release(b);
}

TEST(KvCacheManager, DisabledPrefixCachingNeverHits) {
  KvCacheManager kv(8, kBs, false);
  const auto p = Iota(9);
  BlockTable a, b;
  RunWhole(kv, p, a);
  EXPECT_EQ(RunWhole(kv, p, b), 0);
  kv.Release(a);
  kv.Release(b);
  EXPECT_EQ(kv.num_cached_blocks(), 0);
  EXPECT_EQ(kv.prefix_hits(), 0);
}

TEST(KvCacheManager, DuplicateComputationsShareNothingButStayCorrect) {
  KvCacheManager kv(8, kBs, true);
  const auto p = Iota(9);
  BlockTable a, b;  // both admitted before either committed (same step)
  ASSERT_TRUE(kv.Admit(p, 100, a).has_value());
  ASSERT_TRUE(kv.Admit(p, 100, b).has_value());
  kv.Commit(a, p, 9);
  kv.Commit(b, p, 9);  // duplicates stay unregistered
  EXPECT_EQ(b.num_hashed, 2);
  kv.Release(a);
  kv.Release(b);
  EXPECT_EQ(kv.num_cached_blocks(), 2);
  EXPECT_EQ(kv.num_used_blocks(), 0);
  kv.pool().CheckInvariants();
}

}  // namespace
}  // namespace kiln
