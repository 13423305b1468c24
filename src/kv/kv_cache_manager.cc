#include "kv/kv_cache_manager.h"

#include <algorithm>

#include "util/error.h"

namespace kiln {

KvCacheManager::KvCacheManager(int32_t num_blocks, int32_t block_size, bool prefix_caching)
    : pool_(num_blocks, block_size), prefix_caching_(prefix_caching) {}

int64_t KvCacheManager::BlocksFor(int64_t num_tokens) const {
  return (num_tokens + block_size() - 1) / block_size();
}

void KvCacheManager::FindPrefix(std::span<const int32_t> tokens) {
  match_.clear();
  match_hashes_.clear();
  if (!prefix_caching_ || tokens.empty()) return;
  const int64_t bs = block_size();
  const int64_t max_blocks = (static_cast<int64_t>(tokens.size()) - 1) / bs;
  uint64_t parent = kRootBlockHash;
  for (int64_t i = 0; i < max_blocks; ++i) {
    std::span<const int32_t> block = tokens.subspan(i * bs, bs);
    const uint64_t hash = HashBlock(parent, block);
    const int32_t b = pool_.Find(hash, parent, block);
    if (b < 0) break;
    match_.push_back(b);
    match_hashes_.push_back(hash);
    parent = hash;
  }
}

std::optional<int64_t> KvCacheManager::Admit(std::span<const int32_t> tokens, int64_t max_chunk,
                                             BlockTable& table) {
  KILN_CHECK(table.blocks.empty(), "Admit needs an empty block table");
  FindPrefix(tokens);
  const int64_t cached = static_cast<int64_t>(match_.size()) * block_size();
  const int64_t chunk = std::min<int64_t>(static_cast<int64_t>(tokens.size()) - cached, max_chunk);
  const int64_t needed = BlocksFor(cached + chunk) - static_cast<int64_t>(match_.size());
  // Matched blocks with no reference sit in the LRU list and count as free: taking them shrinks
  // what is left for the new ones.
  int64_t revived = 0;
  for (int32_t b : match_) revived += pool_.ref_count(b) == 0;
  if (needed > pool_.num_free() - revived) return std::nullopt;

  for (int32_t b : match_) pool_.Ref(b);
  table.blocks.assign(match_.begin(), match_.end());
  table.num_hashed = static_cast<int32_t>(match_.size());
  table.last_hash = match_hashes_.empty() ? kRootBlockHash : match_hashes_.back();
  prefix_hits_ += static_cast<int64_t>(match_.size());
  const bool ok = Reserve(table, cached + chunk);
  KILN_CHECK(ok, "KV pool: reserve after a successful admission check failed");
  return cached;
}

bool KvCacheManager::Reserve(BlockTable& table, int64_t num_tokens) {
  const int64_t needed = BlocksFor(num_tokens) - static_cast<int64_t>(table.blocks.size());
  if (needed <= 0) return true;
  if (needed > pool_.num_free()) return false;
  for (int64_t i = 0; i < needed; ++i) table.blocks.push_back(pool_.Allocate());
  return true;
}

void KvCacheManager::Commit(BlockTable& table, std::span<const int32_t> tokens,
                            int64_t num_computed) {
  if (!prefix_caching_) return;
  const int64_t bs = block_size();
  const int64_t full = std::min<int64_t>(num_computed / bs, table.blocks.size());
  for (int64_t i = table.num_hashed; i < full; ++i) {
    std::span<const int32_t> block = tokens.subspan(i * bs, bs);
    const uint64_t hash = HashBlock(table.last_hash, block);
    // A duplicate (another sequence computed the same prefix in parallel) stays unregistered;
    // the chain hash still advances so later blocks of this table can be registered.
    pool_.Register(table.blocks[i], hash, table.last_hash, block);
    table.last_hash = hash;
    table.num_hashed = static_cast<int32_t>(i + 1);
  }
}

void KvCacheManager::Truncate(BlockTable& table, int64_t num_tokens) {
  const size_t keep =
      static_cast<size_t>(std::max<int64_t>(BlocksFor(num_tokens), table.num_hashed));
  while (table.blocks.size() > keep) {
    pool_.Unref(table.blocks.back());
    table.blocks.pop_back();
  }
}

void KvCacheManager::Release(BlockTable& table) {
  for (auto it = table.blocks.rbegin(); it != table.blocks.rend(); ++it) pool_.Unref(*it);
  table.blocks.clear();
  table.num_hashed = 0;
  table.last_hash = kRootBlockHash;
}

}  // namespace kiln
