// Rope: rotary position embedding in place, bit-identical to scalar::Rope (same cos/sin table,
// and each rotated value is a*c - b*s or b*c + a*s with separately rounded products).
#include <cstdint>

#include "kernels/hwy_config.h"
#include "kernels/ops.h"
#include "kernels/scalar_ops.h"
#include "util/error.h"

#ifndef KILN_KERNELS_ROPE_LIMITS_
#define KILN_KERNELS_ROPE_LIMITS_
namespace kiln::kernels {
inline constexpr int kMaxHeadDim = 1024;  // sizes the stack cos/sin tables
}  // namespace kiln::kernels
#endif

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/rope.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace kiln::kernels::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// a * b, rounded to float before any later addition: GCC contracts mul + add into FMA in C++
// even at -std=c++20, while torch rounds every op. The empty asm hides the product.
template <class V>
HWY_INLINE V RoundedMul(V a, V b) {
  V p = hn::Mul(a, b);
#if HWY_ARCH_X86 && HWY_TARGET != HWY_SCALAR
  asm("" : "+v"(p.raw));
#endif
  return p;
}
HWY_INLINE float RoundedMul(float a, float b) {
  float p = a * b;
#if HWY_ARCH_X86
  asm("" : "+x"(p));
#endif
  return p;
}

// (a, b) <- (a c - b s, b c + a s) for vectors of lanes a = x[i..], b = x[i + half..].
template <class D>
HWY_INLINE void RotateHalfAt(D d, float* head, int half, const float* cos, const float* sin,
                             int i) {
  const auto a = hn::LoadU(d, head + i), b = hn::LoadU(d, head + half + i);
  const auto c = hn::LoadU(d, cos + i), s = hn::LoadU(d, sin + i);
  hn::StoreU(hn::Sub(RoundedMul(a, c), RoundedMul(b, s)), d, head + i);
  hn::StoreU(hn::Add(RoundedMul(b, c), RoundedMul(a, s)), d, head + half + i);
}

void RotateHalf(float* head, int half, const float* cos, const float* sin) {
  const hn::ScalableTag<float> df;
  const int lanes = static_cast<int>(hn::Lanes(df));
  int i = 0;
  for (; i + lanes <= half; i += lanes) RotateHalfAt(df, head, half, cos, sin, i);
  for (; i < half; ++i) RotateHalfAt(hn::CappedTag<float, 1>(), head, half, cos, sin, i);
}

// Pairs (2i, 2i + 1). cos2 = {c0, c0, c1, c1, ...}, sin2 = {-s0, s0, -s1, s1, ...}: with the
// pair-swapped x, lane 2i gets a c + b (-s) = a c - b s and lane 2i + 1 gets b c + a s.
void RotateInterleaved(float* head, int head_dim, const float* cos2, const float* sin2) {
  int i = 0;
#if HWY_TARGET != HWY_SCALAR
  const hn::ScalableTag<float> df;
  const int lanes = static_cast<int>(hn::Lanes(df));
  for (; i + lanes <= head_dim; i += lanes) {
    const auto v = hn::LoadU(df, head + i);
    const auto rotated = hn::Add(RoundedMul(v, hn::LoadU(df, cos2 + i)),
                                 RoundedMul(hn::Shuffle2301(v), hn::LoadU(df, sin2 + i)));
    hn::StoreU(rotated, df, head + i);
  }
#endif
  for (; i < head_dim; i += 2) {
    const float a = head[i], b = head[i + 1];
    head[i] = RoundedMul(a, cos2[i]) + RoundedMul(b, sin2[i]);
    head[i + 1] = RoundedMul(b, cos2[i]) + RoundedMul(a, sin2[i + 1]);
  }
}

void RopeT(float* x, int n_heads, int head_dim, const float* inv_freq, int64_t pos,
           RopeStyle style) {
  const int half = head_dim / 2;
  HWY_ALIGN float cos[kMaxHeadDim / 2], sin[kMaxHeadDim / 2];
  scalar::RopeCosSin(inv_freq, half, pos, cos, sin);
  if (style == RopeStyle::kHalf) {
    for (int h = 0; h < n_heads; ++h) RotateHalf(x + int64_t{h} * head_dim, half, cos, sin);
    return;
  }
  HWY_ALIGN float cos2[kMaxHeadDim], sin2[kMaxHeadDim];
  for (int i = 0; i < half; ++i) {
    cos2[2 * i] = cos2[2 * i + 1] = cos[i];
    sin2[2 * i] = -sin[i];
    sin2[2 * i + 1] = sin[i];
  }
  for (int h = 0; h < n_heads; ++h)
    RotateInterleaved(x + int64_t{h} * head_dim, head_dim, cos2, sin2);
}

}  // namespace kiln::kernels::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace kiln::kernels {

HWY_EXPORT(RopeT);

void Rope(float* x, int n_heads, int head_dim, const float* inv_freq, int64_t pos,
          RopeStyle style) {
  KILN_CHECK(head_dim > 0 && head_dim % 2 == 0 && head_dim <= kMaxHeadDim, "Rope: head_dim ",
             head_dim, " must be even and at most ", kMaxHeadDim);
  HWY_DYNAMIC_DISPATCH(RopeT)(x, n_heads, head_dim, inv_freq, pos, style);
}

}  // namespace kiln::kernels
#endif  // HWY_ONCE
