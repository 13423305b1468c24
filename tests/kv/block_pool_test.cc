#include "kv/block_pool.h"

#include <gtest/gtest.h>

#include <set>
#include <vector>

#include "kv/block_hash.h"
#include "kv/block_hash_index.h"
#include "util/error.h"

namespace kiln {
namespace {

std::vector<int32_t> Tokens(int32_t first, int32_t n) {
  std::vector<int32_t> t(n);
  for (int32_t i = 0; i < n; ++i) t[i] = first + i;
  return t;
}

TEST(BlockHash, ChainsOverParentAndTokens) {
  const auto a = Tokens(0, 4), b = Tokens(1, 4);
  EXPECT_EQ(HashBlock(kRootBlockHash, a), HashBlock(kRootBlockHash, a));
  EXPECT_NE(HashBlock(kRootBlockHash, a), HashBlock(kRootBlockHash, b));
  EXPECT_NE(HashBlock(kRootBlockHash, a), HashBlock(HashBlock(kRootBlockHash, b), a));
}

TEST(BlockHashIndex, InsertFindEraseUnderCollisions) {
  BlockHashIndex index(64);
  // Keys sharing their low bits probe the same run; erasing from its middle must keep the rest.
  std::vector<uint64_t> keys;
  for (uint64_t i = 0; i < 40; ++i) keys.push_back((i << 40) | (i % 3));
  for (size_t i = 0; i < keys.size(); ++i) ASSERT_TRUE(index.Insert(keys[i], int32_t(i)));
  EXPECT_FALSE(index.Insert(keys[5], 99));
  for (size_t i = 0; i < keys.size(); i += 2) index.Erase(keys[i]);
  for (size_t i = 0; i < keys.size(); ++i) {
    EXPECT_EQ(index.Find(keys[i]), i % 2 ? int32_t(i) : -1) << i;
  }
  EXPECT_EQ(index.size(), 20);
}

TEST(BlockPool, AllocatesEveryBlockOnceThenFailsCleanly) {
  BlockPool pool(8, 4);
  std::set<int32_t> got;
  for (int i = 0; i < 8; ++i) got.insert(pool.Allocate());
  EXPECT_EQ(got.size(), 8u);
  EXPECT_EQ(*got.begin(), 0);
  EXPECT_EQ(pool.Allocate(), -1);
  EXPECT_EQ(pool.num_used(), 8);
  EXPECT_EQ(pool.num_free(), 0);
  pool.CheckInvariants();
  for (int32_t b : got) pool.Unref(b);
  EXPECT_EQ(pool.num_used(), 0);
  EXPECT_EQ(pool.num_free(), 8);
  pool.CheckInvariants();
}

TEST(BlockPool, RefCountsShareABlock) {
  BlockPool pool(4, 2);
  const auto t = Tokens(7, 2);
  const int32_t b = pool.Allocate();
  ASSERT_TRUE(pool.Register(b, 11, kRootBlockHash, t));
  pool.Ref(b);
  EXPECT_EQ(pool.ref_count(b), 2);
  pool.Unref(b);
  EXPECT_EQ(pool.num_used(), 1);
  pool.Unref(b);
  EXPECT_EQ(pool.num_used(), 0);
  EXPECT_EQ(pool.num_cached(), 1);  // registered: stays findable
  EXPECT_EQ(pool.Find(11, kRootBlockHash, t), b);
  EXPECT_THROW(pool.Unref(b), Error);
  pool.CheckInvariants();
}

TEST(BlockPool, FindVerifiesParentAndTokens) {
  BlockPool pool(4, 2);
  const int32_t b = pool.Allocate();
  ASSERT_TRUE(pool.Register(b, 11, 5, Tokens(1, 2)));
  EXPECT_EQ(pool.Find(11, 5, Tokens(1, 2)), b);
  EXPECT_EQ(pool.Find(11, 6, Tokens(1, 2)), -1);  // same hash, other parent: a collision
  EXPECT_EQ(pool.Find(11, 5, Tokens(2, 2)), -1);  // same hash, other tokens
  EXPECT_EQ(pool.Find(12, 5, Tokens(1, 2)), -1);
  const int32_t dup = pool.Allocate();
  EXPECT_FALSE(pool.Register(dup, 11, 5, Tokens(1, 2)));  // hash taken: dup stays plain
  pool.Unref(dup);
  EXPECT_EQ(pool.num_cached(), 0);
  pool.CheckInvariants();
}

TEST(BlockPool, CleanBlocksGoBeforeCachedOnesAndCachedEvictInLruOrder) {
  BlockPool pool(3, 1);
  const int32_t a = pool.Allocate(), b = pool.Allocate(), c = pool.Allocate();
  pool.Register(a, 100, kRootBlockHash, Tokens(1, 1));
  pool.Register(b, 200, kRootBlockHash, Tokens(2, 1));
  pool.Unref(b);  // cached, least recently used
  pool.Unref(a);  // cached
  pool.Unref(c);  // clean
  EXPECT_EQ(pool.num_cached(), 2);
  EXPECT_EQ(pool.Allocate(), c);  // the clean block first: the cache survives
  EXPECT_EQ(pool.num_cached(), 2);
  EXPECT_EQ(pool.Allocate(), b);  // then the LRU head is evicted
  EXPECT_EQ(pool.Find(200, kRootBlockHash, Tokens(2, 1)), -1);
  EXPECT_EQ(pool.Find(100, kRootBlockHash, Tokens(1, 1)), a);
  pool.CheckInvariants();
}

TEST(BlockPool, RevivingACachedBlockRemovesItFromTheLru) {
  BlockPool pool(2, 1);
  const int32_t a = pool.Allocate(), b = pool.Allocate();
  pool.Register(a, 1, kRootBlockHash, Tokens(1, 1));
  pool.Register(b, 2, kRootBlockHash, Tokens(2, 1));
  pool.Unref(a);
  pool.Unref(b);
  pool.Ref(a);  // a prefix hit on a: b is now the only eviction candidate
  EXPECT_EQ(pool.num_used(), 1);
  EXPECT_EQ(pool.Allocate(), b);
  EXPECT_EQ(pool.Allocate(), -1);
  pool.CheckInvariants();
}

}  // namespace
}  // namespace kiln
