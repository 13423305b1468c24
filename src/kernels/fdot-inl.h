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

#include "hwy/cache_control.h"
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

// The MatMul tile: y[r * y_stride + j] = dot(x + r * k, w + j * w_stride) for r < R, j < NR;
// x rows [R, k], weight rows j at w + j * w_stride. Each loaded x vector serves NR weight rows
// and each widened weight vector R x rows (R = NR = 4: 8 loads per 16 FMAs), and decode (R = 1)
// streams NR weight rows at once. Every (r, j) dot is one FMA chain over k in order, then one
// lane sum, whatever R and NR are: a row's result does not depend on the rows or weight rows
// sharing its tile (batch invariance, docs/architecture.md).
// prefetch: also prefetch the next NR weight rows (the next tile's), in step with this one's.
template <typename WT, int R, int NR>
HWY_INLINE void FDotTileN(const WT* w, int64_t w_stride, int64_t k, const float* x, float* y,
                          int64_t y_stride, bool prefetch = false) {
  const hn::ScalableTag<float> df;
  using V = hn::Vec<decltype(df)>;
  const int64_t n = static_cast<int64_t>(hn::Lanes(df));
  V acc[NR][R];
  for (int j = 0; j < NR; ++j) {
    for (int r = 0; r < R; ++r) acc[j][r] = hn::Zero(df);
  }
  int64_t i = 0;
  for (; i + n <= k; i += n) {
    V xv[R];
    for (int r = 0; r < R; ++r) xv[r] = hn::LoadU(df, x + r * k + i);
    if (prefetch && (i * static_cast<int64_t>(sizeof(WT))) % 64 == 0) {
      for (int j = 0; j < NR; ++j) hwy::Prefetch(w + (NR + j) * w_stride + i);
    }
    for (int j = 0; j < NR; ++j) {
      const V wv = LoadWeights(df, w + j * w_stride + i);
      for (int r = 0; r < R; ++r) acc[j][r] = hn::MulAdd(wv, xv[r], acc[j][r]);
    }
  }
  for (int j = 0; j < NR; ++j) {
    for (int r = 0; r < R; ++r) {
      float sum = hn::GetLane(hn::SumOfLanes(df, acc[j][r]));
      for (int64_t e = i; e < k; ++e) sum += x[r * k + e] * WeightToF32(w + j * w_stride + e);
      y[r * y_stride + j] = sum;
    }
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
