// Prefix-cache identity of a full KV block: a 64-bit hash chained over every block before it,
// hash(parent hash, token ids of the block), as vLLM's block pool does. Equal hashes mean equal
// token prefixes almost surely; the pool still compares the block's tokens and parent hash, so a
// false hit needs a collision of two whole chains.
#pragma once

#include <cstdint>
#include <span>

namespace kiln {

inline constexpr uint64_t kRootBlockHash = 0x6b696c6e2d6b7630ull;  // parent of a sequence's block 0

uint64_t HashBlock(uint64_t parent_hash, std::span<const int32_t> tokens);

}  // namespace kiln
