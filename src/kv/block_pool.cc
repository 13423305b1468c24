#include "kv/block_pool.h"

#include <algorithm>

#include "util/error.h"

namespace kiln {

BlockPool::BlockPool(int32_t num_blocks, int32_t block_size)
    : num_blocks_(num_blocks),
      block_size_(block_size),
      meta_(num_blocks),
      tokens_(static_cast<size_t>(num_blocks) * block_size, -1),
      index_(num_blocks) {
  KILN_CHECK(num_blocks > 0 && block_size > 0, "KV block pool needs blocks (got ", num_blocks,
             " of ", block_size, " tokens)");
  clean_.reserve(num_blocks);
  // Reversed so that Allocate hands out 0, 1, 2, ... on a fresh pool.
  for (int32_t b = num_blocks - 1; b >= 0; --b) clean_.push_back(b);
}

int32_t BlockPool::Allocate() {
  int32_t b;
  if (!clean_.empty()) {
    b = clean_.back();
    clean_.pop_back();
  } else if (lru_head_ >= 0) {
    b = lru_head_;
    LruRemove(b);
    Evict(b);
  } else {
    return -1;
  }
  meta_[b].ref = 1;
  ++num_used_;
  return b;
}

int32_t BlockPool::Find(uint64_t hash, uint64_t parent, std::span<const int32_t> tokens) const {
  const int32_t b = index_.Find(hash);
  if (b < 0 || meta_[b].parent != parent) return -1;
  std::span<const int32_t> held = TokensOf(b);
  return std::equal(held.begin(), held.end(), tokens.begin(), tokens.end()) ? b : -1;
}

void BlockPool::Ref(int32_t block) {
  Meta& m = meta_[block];
  if (m.ref == 0) {
    KILN_CHECK(m.registered, "KV block ", block, " is free; only cached blocks can be revived");
    LruRemove(block);
    ++num_used_;
  }
  ++m.ref;
}

void BlockPool::Unref(int32_t block) {
  Meta& m = meta_[block];
  KILN_CHECK(m.ref > 0, "KV block ", block, " released more often than taken");
  if (--m.ref > 0) return;
  --num_used_;
  if (m.registered) {
    LruPushBack(block);
  } else {
    clean_.push_back(block);
  }
}

bool BlockPool::Register(int32_t block, uint64_t hash, uint64_t parent,
                         std::span<const int32_t> tokens) {
  Meta& m = meta_[block];
  KILN_CHECK(m.ref > 0 && !m.registered, "KV block ", block, " cannot be registered");
  KILN_CHECK(static_cast<int32_t>(tokens.size()) == block_size_, "only full blocks are cached");
  if (!index_.Insert(hash, block)) return false;
  m.registered = true;
  m.hash = hash;
  m.parent = parent;
  std::copy(tokens.begin(), tokens.end(), tokens_.begin() + int64_t{block} * block_size_);
  return true;
}

std::span<const int32_t> BlockPool::TokensOf(int32_t block) const {
  return {tokens_.data() + int64_t{block} * block_size_, static_cast<size_t>(block_size_)};
}

void BlockPool::Evict(int32_t block) {
  Meta& m = meta_[block];
  index_.Erase(m.hash);
  m.registered = false;
}

void BlockPool::LruPushBack(int32_t block) {
  Meta& m = meta_[block];
  m.prev = lru_tail_;
  m.next = -1;
  if (lru_tail_ >= 0) {
    meta_[lru_tail_].next = block;
  } else {
    lru_head_ = block;
  }
  lru_tail_ = block;
  ++lru_size_;
}

void BlockPool::LruRemove(int32_t block) {
  Meta& m = meta_[block];
  (m.prev >= 0 ? meta_[m.prev].next : lru_head_) = m.next;
  (m.next >= 0 ? meta_[m.next].prev : lru_tail_) = m.prev;
  m.prev = m.next = -1;
  --lru_size_;
}

void BlockPool::CheckInvariants() const {
  int32_t used = 0, registered = 0;
  for (const Meta& m : meta_) {
    KILN_CHECK(m.ref >= 0, "negative ref count");
    used += m.ref > 0;
    registered += m.registered;
  }
  KILN_CHECK(used == num_used_, "used count ", num_used_, " but ", used, " blocks have refs");
  KILN_CHECK(registered == index_.size(), "index holds ", index_.size(), " of ", registered);
  int32_t lru = 0;
  for (int32_t b = lru_head_, prev = -1; b >= 0; prev = b, b = meta_[b].next, ++lru) {
    KILN_CHECK(meta_[b].ref == 0 && meta_[b].registered && meta_[b].prev == prev, "bad LRU entry ",
               b);
    KILN_CHECK(index_.Find(meta_[b].hash) == b, "cached block ", b, " not in the index");
  }
  KILN_CHECK(lru == lru_size_, "LRU length ", lru, " vs ", lru_size_);
  for (int32_t b : clean_) KILN_CHECK(meta_[b].ref == 0 && !meta_[b].registered, "bad free ", b);
  KILN_CHECK(static_cast<int32_t>(clean_.size()) + lru_size_ + num_used_ == num_blocks_,
             "blocks lost: ", clean_.size(), " clean + ", lru_size_, " cached + ", num_used_,
             " used != ", num_blocks_);
}

}  // namespace kiln
