// Per-sequence KV block tables over a BlockPool, with prefix caching: once a full block's KV is
// computed it is registered under its chained hash, and a new sequence whose tokens start with
// the same full blocks takes those blocks instead of recomputing them. Block ids only; the
// engine thread is the only caller.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "kv/block_hash.h"
#include "kv/block_pool.h"

namespace kiln {

// One sequence's blocks: position p lives in blocks[p / block_size] at row p % block_size.
struct BlockTable {
  std::vector<int32_t> blocks;
  int32_t num_hashed = 0;               // leading blocks whose chain hash is known
  uint64_t last_hash = kRootBlockHash;  // chain hash of block num_hashed - 1
};

class KvCacheManager {
 public:
  KvCacheManager(int32_t num_blocks, int32_t block_size, bool prefix_caching);

  int32_t block_size() const { return pool_.block_size(); }
  int32_t num_blocks() const { return pool_.num_blocks(); }
  int32_t num_used_blocks() const { return pool_.num_used(); }
  int32_t num_free_blocks() const { return pool_.num_free(); }      // clean + cached
  int32_t num_cached_blocks() const { return pool_.num_cached(); }  // unreferenced, reusable
  int64_t prefix_hits() const { return prefix_hits_; }              // blocks reused by Admit
  int64_t BlocksFor(int64_t num_tokens) const;

  // Starts a sequence (empty `table`) whose history is `tokens`: reuses the longest cached run of
  // full leading blocks (always leaving the last token to compute, so there are logits to
  // sample), then reserves blocks for up to `max_chunk` more tokens. Returns the number of tokens
  // already in the cache, or nullopt, changing nothing, when the pool lacks blocks.
  std::optional<int64_t> Admit(std::span<const int32_t> tokens, int64_t max_chunk,
                               BlockTable& table);
  // Grows `table` to cover positions [0, num_tokens). False, changing nothing, when short.
  bool Reserve(BlockTable& table, int64_t num_tokens);
  // Registers the full blocks among the first `num_computed` tokens (their KV is now written).
  void Commit(BlockTable& table, std::span<const int32_t> tokens, int64_t num_computed);
  // Returns the blocks past those covering positions [0, num_tokens) (a rejected draft's): none
  // of them is registered, since Commit only registers blocks of computed tokens.
  void Truncate(BlockTable& table, int64_t num_tokens);
  // Drops the table's references, last block first, so that the LRU evicts a chain's tail
  // before the head that the tail's hash depends on.
  void Release(BlockTable& table);

  const BlockPool& pool() const { return pool_; }

 private:
  // Cached blocks matching the leading full blocks of `tokens`, into match_ (no refs taken).
  void FindPrefix(std::span<const int32_t> tokens);

  BlockPool pool_;
  bool prefix_caching_;
  int64_t prefix_hits_ = 0;
  std::vector<int32_t> match_;  // scratch for Admit
  std::vector<uint64_t> match_hashes_;
};

}  // namespace kiln
