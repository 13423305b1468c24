// Causal attention reading K/V straight from a paged cache (blocks of `block_size` positions
// addressed through a block table), so no per-step copy of the context is made.
#pragma once

#include <cstdint>

#include "util/dtype.h"
#include "util/thread_pool.h"

namespace kiln::kernels {

// One layer's view of the KV pool for one sequence.
// K of position p: k_base + block_table[p / block_size] * block_stride + (p % block_size) * kv_dim
// elements, where kv_dim = n_kv_heads * head_dim; V likewise from v_base. Elements are f32 or
// bf16 (`dtype`); bf16 is widened exactly to f32 on load, scores and sums stay f32.
struct PagedKv {
  const void* k_base = nullptr;
  const void* v_base = nullptr;
  int64_t block_stride = 0;  // elements between consecutive blocks
  int64_t block_size = 0;    // positions per block
  const int32_t* block_table = nullptr;
  DType dtype = DType::kF32;  // kF32 or kBF16
};

struct AttentionShape {
  int n_heads = 0;
  int n_kv_heads = 0;  // GQA: head h reads kv head h / (n_heads / n_kv_heads)
  int head_dim = 0;
  float scale = 1.0f;  // usually 1/sqrt(head_dim)
};

// q [n_tokens, n_heads, head_dim]; pos [n_tokens]: query t attends to positions 0..pos[t].
// out [n_tokens, n_heads, head_dim]. Parallel over (token, head) on `pool`.
void PagedAttention(const float* q, const int64_t* pos, int64_t n_tokens, const PagedKv& kv,
                    const AttentionShape& shape, float* out, ThreadPool& pool);

namespace scalar {
void PagedAttention(const float* q, const int64_t* pos, int64_t n_tokens, const PagedKv& kv,
                    const AttentionShape& shape, float* out);
}  // namespace scalar

}  // namespace kiln::kernels
