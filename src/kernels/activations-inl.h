// Per-target element-wise kernels: SiluMul, AddInPlace, Softmax (also used by attention.cc).
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

}  // namespace kiln::kernels::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // KILN_KERNELS_ACTIVATIONS_INL_H_
