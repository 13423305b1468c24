// Per-target element-wise kernels: SiluMul, AddInPlace, Softmax (also used by attention.cc),
// ArgMax.
// Tails shorter than a vector go through the same SIMD code with a one-lane tag, so every
// element sees the same math. Re-included once per Highway target (toggle guard below).
#if defined(KILN_KERNELS_ACTIVATIONS_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef KILN_KERNELS_ACTIVATIONS_INL_H_
#undef KILN_KERNELS_ACTIVATIONS_INL_H_
#else
#define KILN_KERNELS_ACTIVATIONS_INL_H_
#endif

#include <algorithm>
#include <cstdint>
#include <limits>

#include "hwy/contrib/math/math-inl.h"
#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace kiln::kernels::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Calls op(d, i) for i stepping over [0, n): full vectors, then one lane at a time.
template <class Op>
HWY_INLINE void ForEachVector(int64_t n, const Op& op) {
  const hn::ScalableTag<float> df;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(df));
  int64_t i = 0;
  for (; i + lanes <= n; i += lanes) op(df, i);
  const hn::CappedTag<float, 1> d1;
  for (; i < n; ++i) op(d1, i);
}

// out = silu(gate) * up = gate / (1 + exp(-gate)) * up, as torch computes it.
inline void SiluMulImpl(const float* gate, const float* up, int64_t n, float* out) {
  ForEachVector(n, [&](auto d, int64_t i) {
    const auto g = hn::LoadU(d, gate + i);
    // exp(-g) is clamped where it would overflow (g < -88): silu is ~0 there either way.
    const auto e = hn::Exp(d, hn::Min(hn::Neg(g), hn::Set(d, 88.0f)));
    const auto silu = hn::Div(g, hn::Add(hn::Set(d, 1.0f), e));
    hn::StoreU(hn::Mul(silu, hn::LoadU(d, up + i)), d, out + i);
  });
}

inline void AddInPlaceImpl(float* y, const float* x, int64_t n) {
  ForEachVector(n, [&](auto d, int64_t i) {
    hn::StoreU(hn::Add(hn::LoadU(d, y + i), hn::LoadU(d, x + i)), d, y + i);
  });
}

// x = exp(x - max) / sum, the division done as a multiplication by 1 / sum (as torch does).
inline void SoftmaxImpl(float* x, int64_t n) {
  const hn::ScalableTag<float> df;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(df));
  auto vmax = hn::Set(df, -std::numeric_limits<float>::infinity());
  int64_t i = 0;
  for (; i + lanes <= n; i += lanes) vmax = hn::Max(vmax, hn::LoadU(df, x + i));
  float max = hn::GetLane(hn::MaxOfLanes(df, vmax));
  for (; i < n; ++i) max = std::max(max, x[i]);

  auto vsum = hn::Zero(df);
  float tail_sum = 0.0f;
  ForEachVector(n, [&](auto d, int64_t j) {
    const auto e = hn::Exp(d, hn::Sub(hn::LoadU(d, x + j), hn::Set(d, max)));
    hn::StoreU(e, d, x + j);
    if constexpr (hn::MaxLanes(d) == 1) {
      tail_sum += hn::GetLane(e);
    } else {
      vsum = hn::Add(vsum, e);
    }
  });
  const float inv_sum = 1.0f / (hn::GetLane(hn::SumOfLanes(df, vsum)) + tail_sum);
  ForEachVector(n, [&](auto d, int64_t j) {
    hn::StoreU(hn::Mul(hn::LoadU(d, x + j), hn::Set(d, inv_sum)), d, x + j);
  });
}

// The first index of the largest value (NaN never wins; 0 when nothing is above -inf): the
// maximum over four vector chains, then the first lane equal to it. A greedy pick over a
// 128K-entry vocabulary is ~10 us this way, ~35 us one compare at a time.
inline int64_t ArgMaxImpl(const float* x, int64_t n) {
  const hn::ScalableTag<float> df;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(df));
  const auto neg_inf = hn::Set(df, -std::numeric_limits<float>::infinity());
  const auto load = [&](int64_t i) {
    const auto v = hn::LoadU(df, x + i);
    return hn::IfThenElse(hn::IsNaN(v), neg_inf, v);
  };
  auto m0 = neg_inf, m1 = neg_inf, m2 = neg_inf, m3 = neg_inf;
  int64_t i = 0;
  for (; i + 4 * lanes <= n; i += 4 * lanes) {
    m0 = hn::Max(m0, load(i)), m1 = hn::Max(m1, load(i + lanes));
    m2 = hn::Max(m2, load(i + 2 * lanes)), m3 = hn::Max(m3, load(i + 3 * lanes));
  }
  for (; i + lanes <= n; i += lanes) m0 = hn::Max(m0, load(i));
  float max = hn::GetLane(hn::MaxOfLanes(df, hn::Max(hn::Max(m0, m1), hn::Max(m2, m3))));
  for (; i < n; ++i) max = x[i] > max ? x[i] : max;
  if (!(max > -std::numeric_limits<float>::infinity())) return 0;
  const auto vmax = hn::Set(df, max);
  for (i = 0; i + lanes <= n; i += lanes) {
    const intptr_t lane = hn::FindFirstTrue(df, hn::Eq(hn::LoadU(df, x + i), vmax));
    if (lane >= 0) return i + lane;
  }
  for (; i < n; ++i) {
    if (x[i] == max) return i;
  }
  return 0;
}

}  // namespace kiln::kernels::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // KILN_KERNELS_ACTIVATIONS_INL_H_
