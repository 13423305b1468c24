// Causal attention reading K/V straight from a paged cache (blocks of `block_size` positions
// addressed through a block table), so no per-step copy of the context is made.
#pragma once

#include <cstdint>
#include <span>

#include "util/dtype.h"
#include "util/thread_pool.h"

namespace kiln::kernels {

// How a block of the pool holds its block_size positions x n_kv_heads heads x head_dim.
enum class KvLayout {
  // [block_size, n_kv_heads, head_dim]: a position's heads side by side, as a token writes them.
  kPositionMajor,
  // [n_kv_heads, block_size, head_dim]: a kv head's positions side by side, so that attention
  // (one task per kv head) reads each block's K and V slices as contiguous runs, not head_dim
  // elements every n_kv_heads * head_dim.
  kHeadMajor,
};

// One layer's view of the KV pool for one sequence.
// K of position p, kv head h: k_base + block_table[p / block_size] * block_stride + the offset of
// (p % block_size, h) in the block: ((p % block_size) * n_kv_heads + h) * head_dim for
// kPositionMajor, (h * block_size + p % block_size) * head_dim for kHeadMajor; V likewise from
// v_base. Elements are f32, f16 or bf16 (`dtype`); f16 / bf16 are widened exactly to f32 on load,
// scores and sums stay f32.
struct PagedKv {
  const void* k_base = nullptr;
  const void* v_base = nullptr;
  int64_t block_stride = 0;  // elements between consecutive blocks
  int64_t block_size = 0;    // positions per block
  const int32_t* block_table = nullptr;
  DType dtype = DType::kF32;  // kF32, kF16 or kBF16
  KvLayout layout = KvLayout::kPositionMajor;
};

struct AttentionShape {
  int n_heads = 0;
  int n_kv_heads = 0;  // GQA: head h reads kv head h / (n_heads / n_kv_heads)
  int head_dim = 0;
  float scale = 1.0f;  // usually 1/sqrt(head_dim)
};

// Elements between consecutive positions of one kv head inside a block of `kv`.
inline int64_t KvPositionStride(const PagedKv& kv, const AttentionShape& s) {
  return kv.layout == KvLayout::kHeadMajor ? s.head_dim
                                           : static_cast<int64_t>(s.n_kv_heads) * s.head_dim;
}

// Elements from k_base (or v_base) to the head_dim values of position p, kv head h, for a
// sequence with `block_table` (the layout's formula above).
inline int64_t KvRowOffset(const PagedKv& kv, const int32_t* block_table, const AttentionShape& s,
                           int64_t p, int64_t h) {
  const int64_t in_block = p % kv.block_size;
  const int64_t row = kv.layout == KvLayout::kHeadMajor ? h * kv.block_size + in_block
                                                        : in_block * s.n_kv_heads + h;
  return block_table[p / kv.block_size] * kv.block_stride + row * s.head_dim;
}

// q [n_tokens, n_heads, head_dim]; pos [n_tokens]: query t attends to positions 0..pos[t].
// out [n_tokens, n_heads, head_dim]. Parallel over (kv head, block of queries) on `pool`.
// Batch invariant: the bits of out[t, h] depend only on q[t, h], pos[t] and the cache, never
// on the other queries of the call or on the pool size.
void PagedAttention(const float* q, const int64_t* pos, int64_t n_tokens, const PagedKv& kv,
                    const AttentionShape& shape, float* out, ThreadPool& pool);

// One sequence of a batched call: its queries are rows [token_begin, token_begin + token_count)
// of q / pos / out, its K/V rows are found through `block_table`.
struct PagedSeq {
  const int32_t* block_table = nullptr;
  int64_t token_begin = 0;
  int64_t token_count = 0;
};

// Several sequences in one call (one pool dispatch, work balanced over all of them); `kv`
// gives the pool and its layout, its block_table is ignored. Same results as one call per seq.
void PagedAttention(const float* q, const int64_t* pos, std::span<const PagedSeq> seqs,
                    const PagedKv& kv, const AttentionShape& shape, float* out, ThreadPool& pool);

namespace scalar {
void PagedAttention(const float* q, const int64_t* pos, int64_t n_tokens, const PagedKv& kv,
                    const AttentionShape& shape, float* out);
}  // namespace scalar

}  // namespace kiln::kernels
