#include "kv/block_hash.h"

namespace kiln {
namespace {

// SplitMix64's finalizer: a cheap bijection with full avalanche.
uint64_t Mix(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

}  // namespace

uint64_t HashBlock(uint64_t parent_hash, std::span<const int32_t> tokens) {
  uint64_t h = Mix(parent_hash ^ (0x9e3779b97f4a7c15ull * (tokens.size() + 1)));
  for (int32_t t : tokens) h = Mix(h + 0x9e3779b97f4a7c15ull + static_cast<uint32_t>(t));
  return h;
}

}  // namespace kiln
