// Per-target activation quantization and row dequantization (see quantize.h, scalar_quant.cc).
// Re-included once per Highway target by quantize.cc via foreach_target.h.
#if defined(KILN_KERNELS_QUANTIZE_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef KILN_KERNELS_QUANTIZE_INL_H_
#undef KILN_KERNELS_QUANTIZE_INL_H_
#else
#define KILN_KERNELS_QUANTIZE_INL_H_
#endif

#include <cstring>
#include <type_traits>

#include "hwy/highway.h"
#include "kernels/ops.h"
#include "kernels/quantize.h"
#include "util/half.h"

HWY_BEFORE_NAMESPACE();
namespace kiln::kernels::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// At most 32 lanes so that a vector never spans two blocks.
using QuantTag = hn::CappedTag<float, kQBlock>;

// Quantizes one block of 32 floats; bit-identical to scalar::QuantizeActs (same float ops,
// NearestInt rounds half to even like nearbyint).
HWY_INLINE void QuantizeActsBlock(const float* x, int8_t* q, float* ds, int32_t* sum) {
  const QuantTag df;
  const hn::RebindToSigned<QuantTag> di;
  const hn::Rebind<int8_t, QuantTag> d8;
  const size_t n = hn::Lanes(df);
  auto vmax = hn::Zero(df);
  for (size_t j = 0; j < kQBlock; j += n) vmax = hn::Max(vmax, hn::Abs(hn::LoadU(df, x + j)));
  const float amax = hn::GetLane(hn::MaxOfLanes(df, vmax));
  const float d = amax / 127.0f;
  const auto id = hn::Set(df, amax != 0.0f ? 127.0f / amax : 0.0f);
  auto vsum = hn::Zero(di);
  for (size_t j = 0; j < kQBlock; j += n) {
    const auto qi = hn::NearestInt(hn::Mul(hn::LoadU(df, x + j), id));
    vsum = hn::Add(vsum, qi);
    hn::StoreU(hn::DemoteTo(d8, qi), d8, q + j);
  }
  *sum = hn::GetLane(hn::SumOfLanes(di, vsum));
  ds[0] = F16ToF32(F32ToF16(d));
  ds[1] = F16ToF32(F32ToF16(d * static_cast<float>(*sum)));
}

inline void QuantizeActsImpl(const float* x, int64_t rows, const ActsView& out) {
  const int64_t nb = out.blocks();
  for (int64_t i = 0; i < rows * nb; ++i) {
    QuantizeActsBlock(x + i * kQBlock, out.qs + i * kQBlock, out.ds + 2 * i, out.sums + i);
  }
}

// dst[0, n) = f16 or bf16 src converted (exact).
template <typename HalfT>
HWY_INLINE void WidenRow(const uint8_t* src, int64_t n, float* dst) {
  const hn::ScalableTag<float> df;
  const hn::Rebind<HalfT, decltype(df)> dh;
  const HalfT* h = reinterpret_cast<const HalfT*>(src);
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(df));
  int64_t i = 0;
  for (; i + lanes <= n; i += lanes)
    hn::StoreU(hn::PromoteTo(df, hn::LoadU(dh, h + i)), df, dst + i);
  for (; i < n; ++i) {
    uint16_t bits;
    std::memcpy(&bits, src + 2 * i, 2);
    dst[i] = std::is_same_v<HalfT, hwy::bfloat16_t> ? Bf16ToF32(bits) : F16ToF32(bits);
  }
}

// One q8_0/q4_0/q4_1 block -> 32 floats: q * d (+ m). q * d is exact in float (at most 8 + 11
// significant bits), so MulAdd and Mul + Add agree and match the scalar twin bit for bit.
template <DType T>
HWY_INLINE void DequantizeBlock(const uint8_t* blk, float* dst) {
  const hn::CappedTag<float, 16> df;
  const hn::RebindToSigned<decltype(df)> di;
  const hn::Rebind<int8_t, decltype(df)> d8;
  const hn::Rebind<uint8_t, decltype(df)> du8;
  const size_t n = hn::Lanes(df);
  uint16_t d_bits, m_bits = 0;
  std::memcpy(&d_bits, blk, 2);
  if (T == DType::kQ4_1) std::memcpy(&m_bits, blk + 2, 2);
  const auto d = hn::Set(df, F16ToF32(d_bits));
  const auto m = hn::Set(df, F16ToF32(m_bits));
  if (T == DType::kQ8_0) {
    const int8_t* q = reinterpret_cast<const int8_t*>(blk + 2);
    for (size_t j = 0; j < 32; j += n) {
      hn::StoreU(hn::Mul(hn::ConvertTo(df, hn::PromoteTo(di, hn::LoadU(d8, q + j))), d), df,
                 dst + j);
    }
    return;
  }
  const uint8_t* qs = blk + (T == DType::kQ4_0 ? 2 : 4);
  const auto offset = hn::Set(di, T == DType::kQ4_0 ? 8 : 0);
  for (size_t j = 0; j < 16; j += n) {
    const auto bytes = hn::PromoteTo(di, hn::LoadU(du8, qs + j));
    const auto lo = hn::Sub(hn::And(bytes, hn::Set(di, 0x0F)), offset);
    const auto hi = hn::Sub(hn::ShiftRight<4>(bytes), offset);
    hn::StoreU(hn::MulAdd(hn::ConvertTo(df, lo), d, m), df, dst + j);
    hn::StoreU(hn::MulAdd(hn::ConvertTo(df, hi), d, m), df, dst + j + 16);
  }
}

template <DType T>
HWY_INLINE void DequantizeBlocks(const uint8_t* src, int64_t n, float* dst) {
  const int bytes = GetDTypeInfo(T).block_bytes;
  for (int64_t b = 0; b < n / kQBlock; ++b) DequantizeBlock<T>(src + b * bytes, dst + b * kQBlock);
}

// dst [n] = src rounded to f16 (t = kF16) or bf16 (kBF16) to nearest even, the bits of
// util/half.h's F32ToF16 / F32ToBf16 (NaN stays a quiet NaN); false for other types, and on
// targets without a hardware f32 -> f16 conversion (the caller then runs the scalar loop). The
// KV cache writes every new token's K and V rows this way: one at a time through the library's
// software f16 conversion they cost ~10 us per Llama-3.2-1B layer.
inline bool NarrowRowImpl(DType t, const float* src, int64_t n, uint16_t* dst) {
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX2  // vcvtps2ph (F16C) rounds to nearest even
  const hn::ScalableTag<float> df;
  const hn::RebindToUnsigned<decltype(df)> du;
  const hn::RebindToSigned<decltype(df)> di;
  const hn::Rebind<uint16_t, decltype(df)> du16;
  const hn::Rebind<hwy::float16_t, decltype(df)> df16;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(df));
  int64_t i = 0;
  if (t == DType::kF16) {
    for (; i + lanes <= n; i += lanes) {
      hn::StoreU(hn::BitCast(du16, hn::DemoteTo(df16, hn::LoadU(df, src + i))), du16, dst + i);
    }
    for (; i < n; ++i) dst[i] = F32ToF16(src[i]);
    return true;
  }
  if (t == DType::kBF16) {
    const auto abs_mask = hn::Set(du, 0x7fffffffu), inf_bits = hn::Set(du, 0x7f800000u);
    for (; i + lanes <= n; i += lanes) {
      const auto bits = hn::BitCast(du, hn::LoadU(df, src + i));
      const auto even = hn::And(hn::ShiftRight<16>(bits), hn::Set(du, 1u));
      const auto rounded = hn::ShiftRight<16>(hn::Add(bits, hn::Add(hn::Set(du, 0x7fffu), even)));
      const auto quiet_nan = hn::Or(hn::ShiftRight<16>(bits), hn::Set(du, 0x40u));
      const auto is_nan = hn::Gt(hn::And(bits, abs_mask), inf_bits);
      const auto half = hn::IfThenElse(is_nan, quiet_nan, rounded);  // < 2^16: fits u16
      hn::StoreU(hn::DemoteTo(du16, hn::BitCast(di, half)), du16, dst + i);
    }
    for (; i < n; ++i) dst[i] = F32ToBf16(src[i]);
    return true;
  }
#else
  (void)t, (void)src, (void)n, (void)dst;
#endif
  return false;
}

// Returns false for dtypes it does not handle (the caller throws).
inline bool DequantizeRowImpl(DType t, const uint8_t* src, int64_t n, float* dst) {
  switch (t) {
    case DType::kF32:
      std::memcpy(dst, src, static_cast<size_t>(n) * 4);
      return true;
    case DType::kF16:
      WidenRow<hwy::float16_t>(src, n, dst);
      return true;
    case DType::kBF16:
      WidenRow<hwy::bfloat16_t>(src, n, dst);
      return true;
    case DType::kQ8_0:
      DequantizeBlocks<DType::kQ8_0>(src, n, dst);
      return true;
    case DType::kQ4_0:
      DequantizeBlocks<DType::kQ4_0>(src, n, dst);
      return true;
    case DType::kQ4_1:
      DequantizeBlocks<DType::kQ4_1>(src, n, dst);
      return true;
    default:
      return false;
  }
}

}  // namespace kiln::kernels::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // KILN_KERNELS_QUANTIZE_INL_H_
