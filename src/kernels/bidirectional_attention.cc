// Bidirectional attention of one sequence (encoders): every query sees every key. Per head,
// the keys are first transposed to [hd, n] so that a query's n scores come out of broadcast
// FMAs over contiguous key columns, with no horizontal sum per key (the causal kernel's
// per-key dot products spend most of their time in those sums at hd = 32..64); softmax
// (activations-inl.h), then out = sum_j p_j v_j. Scores are scaled after the dot product, as
// transformers' eager attention does.
#include <cstdint>
#include <vector>

#include "kernels/hwy_config.h"
#include "kernels/ops.h"
#include "kernels/parallel.h"
#include "util/error.h"

#ifndef KILN_KERNELS_BIDIRECTIONAL_ARGS_
#define KILN_KERNELS_BIDIRECTIONAL_ARGS_
namespace kiln::kernels {
struct BidirectionalArgs {
  const float *q, *k, *v;  // [n, stride] rows, head h at columns [h * hd, (h + 1) * hd)
  float* out;              // [n, stride]
  int64_t n, stride;
  int n_heads, head_dim;
  float scale;
};
}  // namespace kiln::kernels
#endif

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/bidirectional_attention.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "kernels/activations-inl.h"

HWY_BEFORE_NAMESPACE();
namespace kiln::kernels::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Heads [h0, h1): for each, all n queries against all n keys.
void BidirectionalHeadsT(const BidirectionalArgs& a, int64_t h0, int64_t h1) {
  thread_local std::vector<float> kt, scores;  // [hd, n] keys transposed; [n] one query's
  const int64_t n = a.n, hd = a.head_dim;
  kt.resize(static_cast<size_t>(hd * n));
  scores.resize(static_cast<size_t>(n));
  for (int64_t h = h0; h < h1; ++h) {
    const int64_t col = h * hd;
    for (int64_t j = 0; j < n; ++j) {
      const float* key = a.k + j * a.stride + col;
      for (int64_t d = 0; d < hd; ++d) kt[d * n + j] = key[d];
    }
    for (int64_t t = 0; t < n; ++t) {
      const float* q = a.q + t * a.stride + col;
      float* s = scores.data();
      ForEachVector(n, [&](auto dv, int64_t j) {
        auto acc = hn::Zero(dv);
        for (int64_t d = 0; d < hd; ++d) {
          acc = hn::MulAdd(hn::Set(dv, q[d]), hn::LoadU(dv, kt.data() + d * n + j), acc);
        }
        hn::StoreU(hn::Mul(acc, hn::Set(dv, a.scale)), dv, s + j);
      });
      SoftmaxImpl(s, n);
      float* out = a.out + t * a.stride + col;
      ForEachVector(hd, [&](auto dv, int64_t d) {
        auto acc = hn::Zero(dv);
        for (int64_t j = 0; j < n; ++j) {
          acc = hn::MulAdd(hn::Set(dv, s[j]), hn::LoadU(dv, a.v + j * a.stride + col + d), acc);
        }
        hn::StoreU(acc, dv, out + d);
      });
    }
  }
}

}  // namespace kiln::kernels::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace kiln::kernels {

HWY_EXPORT(BidirectionalHeadsT);

void BidirectionalAttention(const float* q, const float* k, const float* v, int64_t n,
                            int64_t stride, int n_heads, int head_dim, float scale, float* out,
                            ThreadPool& pool) {
  KILN_CHECK(n_heads > 0 && head_dim > 0 && int64_t{n_heads} * head_dim <= stride,
             "BidirectionalAttention: ", n_heads, " heads of ", head_dim, " in rows of ", stride);
  if (n <= 0) return;
  const BidirectionalArgs args{q, k, v, out, n, stride, n_heads, head_dim, scale};
  const auto heads = HWY_DYNAMIC_DISPATCH(BidirectionalHeadsT);
  SplitRange(pool, n_heads, 1, [&args, heads](int64_t h0, int64_t h1) { heads(args, h0, h1); });
}

}  // namespace kiln::kernels
#endif  // HWY_ONCE
