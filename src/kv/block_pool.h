// A fixed pool of KV block ids with reference counts (bookkeeping only; the tensors live in the
// model's paged KV cache). A block is in exactly one state:
//   used:   ref count > 0, held by one or more sequences' block tables;
//   cached: ref count 0 but holding a registered full prefix block, kept in an LRU list so a later
//           sequence with the same prefix can take it back (a prefix-cache hit);
//   clean:  ref count 0, nothing worth keeping, on the free list.
// Allocation takes a clean block first and evicts the least recently used cached one only when
// none is left, so the cache is never dropped while free memory remains.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "kv/block_hash_index.h"

namespace kiln {

class BlockPool {
 public:
  BlockPool(int32_t num_blocks, int32_t block_size);

  int32_t num_blocks() const { return num_blocks_; }
  int32_t block_size() const { return block_size_; }
  int32_t num_used() const { return num_used_; }
  int32_t num_cached() const { return lru_size_; }
  // Blocks an allocation can get: clean plus cached (evictable).
  int32_t num_free() const { return num_blocks_ - num_used_; }
  int32_t ref_count(int32_t block) const { return meta_[block].ref; }
  bool is_registered(int32_t block) const { return meta_[block].registered; }

  // A block for new content with ref count 1, or -1 when every block is used.
  int32_t Allocate();
  // The cached or used block holding the full block `tokens` whose chain hash is `hash` and whose
  // parent's is `parent`; -1 when absent. Takes no reference.
  int32_t Find(uint64_t hash, uint64_t parent, std::span<const int32_t> tokens) const;
  void Ref(int32_t block);    // a cached block leaves the LRU list
  void Unref(int32_t block);  // at 0: to the LRU tail when registered, else to the free list
  // Marks the used `block` as holding the full block `tokens` (hash chained from `parent`), so
  // Find can return it. False when another block already holds `hash` (this one stays
  // unregistered and is freed clean).
  bool Register(int32_t block, uint64_t hash, uint64_t parent, std::span<const int32_t> tokens);

  // Throws kiln::Error when the lists, counts and index disagree (tests).
  void CheckInvariants() const;

 private:
  struct Meta {
    int32_t ref = 0;
    int32_t prev = -1, next = -1;  // LRU links while cached
    bool registered = false;
    uint64_t hash = 0, parent = 0;
  };
  void LruPushBack(int32_t block);
  void LruRemove(int32_t block);
  std::span<const int32_t> TokensOf(int32_t block) const;
  void Evict(int32_t block);

  int32_t num_blocks_, block_size_;
  std::vector<Meta> meta_;
  std::vector<int32_t> tokens_;  // [num_blocks, block_size]: contents of registered blocks
  std::vector<int32_t> clean_;   // free list (stack)
  int32_t lru_head_ = -1, lru_tail_ = -1, lru_size_ = 0;
  int32_t num_used_ = 0;
  BlockHashIndex index_;
};

}  // namespace kiln
