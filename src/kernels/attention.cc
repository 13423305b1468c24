// Causal GQA attention over a sequence's f32 KV cache, two passes per (token, head):
// scores = scale * q.k_j for j <= pos, softmax (activations-inl.h), out = sum_j p_j v_j.
// Matches transformers' eager attention: scores are scaled after the dot product.
#include <cstdint>
#include <vector>

#include "kernels/hwy_config.h"
#include "kernels/ops.h"
#include "kernels/parallel.h"
#include "util/error.h"

#ifndef KILN_KERNELS_ATTENTION_ARGS_
#define KILN_KERNELS_ATTENTION_ARGS_
namespace kiln::kernels {
struct AttentionArgs {
  const float* q;      // [n_tokens, n_heads, head_dim]
  const int64_t* pos;  // [n_tokens]
  const float* k;      // [n_ctx, n_kv_heads, head_dim]
  const float* v;      // [n_ctx, n_kv_heads, head_dim]
  float* out;          // [n_tokens, n_heads, head_dim]
  int n_heads, n_kv_heads, head_dim;
  float scale;
};
}  // namespace kiln::kernels
#endif

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/attention.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "kernels/activations-inl.h"
#include "kernels/fdot-inl.h"

HWY_BEFORE_NAMESPACE();
namespace kiln::kernels::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// out[0, n) += p * v[0, n).
HWY_INLINE void AddScaled(float p, const float* v, int64_t n, float* out) {
  ForEachVector(n, [&](auto d, int64_t i) {
    hn::StoreU(hn::MulAdd(hn::Set(d, p), hn::LoadU(d, v + i), hn::LoadU(d, out + i)), d, out + i);
  });
}

// Attention for items [i0, i1) of the (token, head) grid, item = token * n_heads + head.
void AttentionItemsT(const AttentionArgs& a, int64_t i0, int64_t i1) {
  thread_local std::vector<float> scores;  // per worker thread; grows to the longest context
  const int group = a.n_heads / a.n_kv_heads;
  const int64_t hd = a.head_dim, kv_stride = int64_t{a.n_kv_heads} * hd;
  for (int64_t item = i0; item < i1; ++item) {
    const int64_t t = item / a.n_heads;
    const int h = static_cast<int>(item % a.n_heads);
    const float* q = a.q + item * hd;
    const float* k = a.k + (h / group) * hd;
    const float* v = a.v + (h / group) * hd;
    const int64_t n_ctx = a.pos[t] + 1;
    if (static_cast<int64_t>(scores.size()) < n_ctx) scores.resize(n_ctx);
    for (int64_t j = 0; j < n_ctx; ++j) scores[j] = DotF32(q, k + j * kv_stride, hd) * a.scale;
    SoftmaxImpl(scores.data(), n_ctx);
    float* out = a.out + item * hd;
    for (int64_t i = 0; i < hd; ++i) out[i] = 0.0f;
    for (int64_t j = 0; j < n_ctx; ++j) AddScaled(scores[j], v + j * kv_stride, hd, out);
  }
}

}  // namespace kiln::kernels::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace kiln::kernels {

HWY_EXPORT(AttentionItemsT);

void Attention(const float* q, const int64_t* pos, int64_t n_tokens, const float* k, const float* v,
               int n_heads, int n_kv_heads, int head_dim, float scale, float* out,
               ThreadPool& pool) {
  KILN_CHECK(n_kv_heads > 0 && n_heads % n_kv_heads == 0, "Attention: ", n_heads,
             " heads not divisible by ", n_kv_heads, " kv heads");
  const AttentionArgs args{q, pos, k, v, out, n_heads, n_kv_heads, head_dim, scale};
  const auto items = HWY_DYNAMIC_DISPATCH(AttentionItemsT);
  SplitRange(pool, n_tokens * n_heads, 1,
             [&args, items](int64_t i0, int64_t i1) { items(args, i0, i1); });
}

}  // namespace kiln::kernels
#endif  // HWY_ONCE
