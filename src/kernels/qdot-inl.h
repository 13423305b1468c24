// Per-target integer dot-product tiles for quantized weights (q8_0, q4_0, q4_1) against
// activations quantized by QuantizeActs (quantize.h):
//   QDotTile<T, R>(w_row, x, y, y_stride):  y[r * y_stride] = dot(w_row, row r of x), r < R.
// Per block b the dot is exact integer math, then scaled in f32 as GGML does:
//   q8_0: d_w d_x sum(w_j q_j)           q4_0: d_w d_x sum((n_j - 8) q_j)
//   q4_1: d_w d_x sum(n_j q_j) + m_w s_x   (s_x = f16(d_x sum q_j), see quantize.h)
// and the block results are summed in f32. Only that f32 sum differs from the scalar twin
// (scalar::DotQuantRow): its order, and FMA rounding on x86.
//
// x86 targets use intrinsics: AVX2 does one block per step with maddubs/madd and converts the
// f16 scales of 4 blocks at once; AVX3 does two blocks per 512-bit step and gathers the scales
// of 8 blocks at once; AVX3_DL does the same with VNNI vpdpbusd. Other targets call the scalar
// twin.
// Re-included once per Highway target (toggle guard below).
#if defined(KILN_KERNELS_QDOT_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef KILN_KERNELS_QDOT_INL_H_
#undef KILN_KERNELS_QDOT_INL_H_
#else
#define KILN_KERNELS_QDOT_INL_H_
#endif

#include <cstdint>
#include <cstring>

#include "hwy/highway.h"
#include "kernels/quantize.h"
#include "kernels/scalar_ops.h"
#include "util/dtype.h"

#if HWY_TARGET == HWY_AVX2 || HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
#include <immintrin.h>
#endif
#if HWY_TARGET == HWY_AVX3_DL && !defined(KILN_AVX512VNNI_PRAGMA)
#error "compile AVX3_DL code under #pragma GCC target(\"avx512vnni\") (see matmul.cc)"
#endif

HWY_BEFORE_NAMESPACE();
namespace kiln::kernels::HWY_NAMESPACE {

// Weight block sizes in bytes and offset of the quants inside a block (after d, and m).
template <DType T>
inline constexpr int kBlockBytes = T == DType::kQ8_0 ? 34 : (T == DType::kQ4_0 ? 18 : 20);
template <DType T>
inline constexpr int kQuantsOffset = T == DType::kQ4_1 ? 4 : 2;

HWY_INLINE uint32_t LoadU16(const uint8_t* p) {
  uint16_t v;
  std::memcpy(&v, p, 2);
  return v;
}
HWY_INLINE uint32_t LoadU32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

// f16 scale(s) of a block as the low half-lanes of a vector: q4_1 gives {d, m}, others {d, 0}.
template <DType T>
HWY_INLINE uint32_t BlockScaleBits(const uint8_t* blk) {
  return T == DType::kQ4_1 ? LoadU32(blk) : LoadU16(blk);
}

}  // namespace kiln::kernels::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_TARGET == HWY_AVX2
#include "kernels/qdot_avx2-inl.h"
#elif HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
#include "kernels/qdot_avx512-inl.h"
#else
HWY_BEFORE_NAMESPACE();
namespace kiln::kernels::HWY_NAMESPACE {

template <DType T, int R>
HWY_INLINE void QDotTile(const uint8_t* w_row, const ActsView& x, float* y, int64_t y_stride) {
  for (int r = 0; r < R; ++r) y[r * y_stride] = scalar::DotQuantRow(T, w_row, x, r);
}

}  // namespace kiln::kernels::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();
#endif

#endif  // KILN_KERNELS_QDOT_INL_H_
