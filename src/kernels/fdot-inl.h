// Per-target dot-product tiles for f32/f16/bf16 weights: R rows of f32 activations against one
// weight row, f32 products and accumulation (f16/bf16 widened exactly on the fly).
// Re-included once per Highway target (toggle guard below).
#if defined(KILN_KERNELS_FDOT_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef KILN_KERNELS_FDOT_INL_H_
#undef KILN_KERNELS_FDOT_INL_H_
#else
#define KILN_KERNELS_FDOT_INL_H_
#endif

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "hwy/highway.h"
#include "util/half.h"

HWY_BEFORE_NAMESPACE();
namespace kiln::kernels::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Loads Lanes(df) weights starting at p as f32.
template <typename WT, class DF>
HWY_INLINE hn::Vec<DF> LoadWeights(DF df, const WT* p) {
  if constexpr (std::is_same_v<WT, float>) {
    return hn::LoadU(df, p);
  } else {
    return hn::PromoteTo(df, hn::LoadU(hn::Rebind<WT, DF>(), p));
  }
}

template <typename WT>
HWY_INLINE float WeightToF32(const WT* p) {
  if constexpr (std::is_same_v<WT, float>) {
    return *p;
  } else {
    uint16_t bits;
    std::memcpy(&bits, p, 2);
    return std::is_same_v<WT, hwy::bfloat16_t> ? Bf16ToF32(bits) : F16ToF32(bits);
  }
}

// y[r * y_stride] = dot(x + r * k, w) for r < R; x rows [R, k], w [k].
// Each weight vector is loaded (and widened) once and used for all R rows; with few rows the
// loop is unrolled so that at least 4 independent FMA chains hide the FMA latency.
template <typename WT, int R>
HWY_INLINE void FDotTile(const WT* w, int64_t k, const float* x, float* y, int64_t y_stride) {
  const hn::ScalableTag<float> df;
  using V = hn::Vec<decltype(df)>;
  constexpr int U = R == 1 ? 4 : (R == 2 ? 2 : 1);
  const int64_t n = static_cast<int64_t>(hn::Lanes(df));
  V acc[U][R];
  for (int u = 0; u < U; ++u) {
    for (int r = 0; r < R; ++r) acc[u][r] = hn::Zero(df);
  }
  int64_t i = 0;
  for (; i + U * n <= k; i += U * n) {
    for (int u = 0; u < U; ++u) {
      const V wv = LoadWeights(df, w + i + u * n);
      for (int r = 0; r < R; ++r) {
        acc[u][r] = hn::MulAdd(wv, hn::LoadU(df, x + r * k + i + u * n), acc[u][r]);
      }
    }
  }
  for (; i + n <= k; i += n) {
    const V wv = LoadWeights(df, w + i);
    for (int r = 0; r < R; ++r) acc[0][r] = hn::MulAdd(wv, hn::LoadU(df, x + r * k + i), acc[0][r]);
  }
  for (int r = 0; r < R; ++r) {
    for (int u = 1; u < U; ++u) acc[0][r] = hn::Add(acc[0][r], acc[u][r]);
    float sum = hn::GetLane(hn::SumOfLanes(df, acc[0][r]));
    for (int64_t j = i; j < k; ++j) sum += x[r * k + j] * WeightToF32(w + j);
    y[r * y_stride] = sum;
  }
}

// Plain f32 dot product of a [k] and b [k] (attention scores).
HWY_INLINE float DotF32(const float* a, const float* b, int64_t k) {
  float out;
  FDotTile<float, 1>(a, k, b, &out, 0);
  return out;
}

}  // namespace kiln::kernels::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // KILN_KERNELS_FDOT_INL_H_
