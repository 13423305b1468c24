// Per-target K-quant kernels (layouts and numerics in kquant.h):
//   KDequantizeImpl: blocks -> floats with Highway ops (bit-identical to the scalar twin: each
//     value is one rounding of an exact product or difference, so FMA contraction cannot change
//     it);
//   KDotTile<T, R> / Q5DotTile<T, R>: R activation rows against one weight row. x86 targets use
//     intrinsics: every super-block is unpacked to unsigned bytes in element order, 32 (AVX2)
//     or 64 (AVX3) elements at a time; maddubs makes int16 pair sums (q6_K: minus 32 x pair
//     sums; |pair| <= 2 * 63 * 127 + 2 * 32 * 127, no saturation), madd (AVX3_DL: VNNI
//     vpdpwssd) multiplies them by the int16 sub-block scales into 8 int32 lanes per row, and
//     one FMA per super-block scales those in f32: the lanes and f32 steps of llama.cpp's AVX2
//     kernels, hence its results bit for bit. Scales stay in registers. Other targets call the
//     scalar twins.
// Re-included once per Highway target (toggle guard below).
#if defined(KILN_KERNELS_KQUANT_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef KILN_KERNELS_KQUANT_INL_H_
#undef KILN_KERNELS_KQUANT_INL_H_
#else
#define KILN_KERNELS_KQUANT_INL_H_
#endif

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "hwy/highway.h"
#include "kernels/kquant.h"
#include "kernels/panel_scratch.h"
#include "kernels/quantize.h"
#include "kernels/scalar_ops.h"
#include "util/dtype.h"
#include "util/half.h"

#undef KILN_KQUANT_X86  // set anew for each target pass
#if HWY_TARGET == HWY_AVX2 || HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
#include <immintrin.h>
#define KILN_KQUANT_X86 1
#else
#define KILN_KQUANT_X86 0
#endif
#if HWY_TARGET == HWY_AVX3_DL && !defined(KILN_AVX512VNNI_PRAGMA)
#error "compile AVX3_DL code under #pragma GCC target(\"avx512vnni\") (see kquant.cc)"
#endif

HWY_BEFORE_NAMESPACE();
namespace kiln::kernels::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

template <DType T>
inline constexpr int kKBlockBytes = T == DType::kQ4_K ? 144 : (T == DType::kQ5_K ? 176 : 210);
// q5_0 / q5_1 stored blocks: f16 d (q5_1: then f16 m), 4 bytes qh, 16 bytes qs.
template <DType T>
inline constexpr int kQ5QhOffset = T == DType::kQ5_0 ? 2 : 4;
template <DType T>
inline constexpr int kQ5BlockBytes = kQ5QhOffset<T> + 4 + 16;

HWY_INLINE float LoadF16Scale(const uint8_t* p) {
  uint16_t v;
  std::memcpy(&v, p, 2);
  return F16ToF32(v);
}

// The 8 scales and 8 mins of a q4_K / q5_K super-block (6 bits each, see kquant.h).
HWY_INLINE void UnpackScaleMinK4(const uint8_t* q, uint8_t* sc, uint8_t* m) {
  for (int s = 0; s < 4; ++s) {
    sc[s] = q[s] & 63;
    m[s] = q[s + 4] & 63;
    sc[s + 4] = static_cast<uint8_t>((q[s + 8] & 0x0F) | ((q[s] >> 6) << 4));
    m[s + 4] = static_cast<uint8_t>((q[s + 8] >> 4) | ((q[s + 4] >> 6) << 4));
  }
}

// ---------------------------------------------------------------------------------------------
// Dequantization (Highway, every target).

using KTagF = hn::CappedTag<float, 16>;

// dst[l] = d1 * q[l] - m1 for l < 32, q[l] = (bytes[l] >> shift) & 15 | hi-bit from qh.
// kHighBit < 0: no fifth bit (q4_K); else bit kHighBit of qh[l] becomes bit 4.
HWY_INLINE void DequantizeQ45Group(const uint8_t* bytes, int shift, const uint8_t* qh, int hbit,
                                   float d1, float m1, float* dst) {
  const KTagF df;
  const hn::RebindToSigned<KTagF> di;
  const hn::Rebind<uint8_t, KTagF> du8;
  const size_t n = hn::Lanes(df);
  const auto vd = hn::Set(df, d1), vm = hn::Set(df, m1);
  for (size_t l = 0; l < 32; l += n) {
    auto q = hn::And(hn::ShiftRightSame(hn::PromoteTo(di, hn::LoadU(du8, bytes + l)), shift),
                     hn::Set(di, 0x0F));
    if (qh != nullptr) {
      const auto h = hn::ShiftRightSame(hn::PromoteTo(di, hn::LoadU(du8, qh + l)), hbit);
      q = hn::Or(q, hn::ShiftLeft<4>(hn::And(h, hn::Set(di, 1))));
    }
    hn::StoreU(hn::Sub(hn::Mul(vd, hn::ConvertTo(df, q)), vm), df, dst + l);
  }
}

template <DType T>
HWY_INLINE void DequantizeSuperBlock(const uint8_t* blk, float* y) {
  if constexpr (T == DType::kQ6_K) {
    const KTagF df;
    const hn::RebindToSigned<KTagF> di;
    const hn::Rebind<uint8_t, KTagF> du8;
    const size_t n = hn::Lanes(df);
    const float d = LoadF16Scale(blk + offsetof(BlockQ6_K, d));
    const int8_t* sc = reinterpret_cast<const int8_t*>(blk + offsetof(BlockQ6_K, scales));
    for (int h = 0; h < 2; ++h) {
      const uint8_t* ql = blk + offsetof(BlockQ6_K, ql) + 64 * h;
      const uint8_t* qh = blk + offsetof(BlockQ6_K, qh) + 32 * h;
      for (int i = 0; i < 4; ++i) {  // elements 128 h + 32 i + l
        const uint8_t* low = ql + 32 * (i & 1);
        const int nshift = i < 2 ? 0 : 4;
        for (size_t l = 0; l < 32; l += n) {
          const int e = 128 * h + 32 * i + static_cast<int>(l);
          // A vector never spans two 16-element scale groups when n <= 16.
          const auto scale = hn::Set(df, d * static_cast<float>(sc[e / 16]));
          const auto nib =
              hn::And(hn::ShiftRightSame(hn::PromoteTo(di, hn::LoadU(du8, low + l)), nshift),
                      hn::Set(di, 0x0F));
          const auto hi = hn::And(
              hn::ShiftRightSame(hn::PromoteTo(di, hn::LoadU(du8, qh + l)), 2 * i), hn::Set(di, 3));
          const auto q = hn::Sub(hn::Or(nib, hn::ShiftLeft<4>(hi)), hn::Set(di, 32));
          hn::StoreU(hn::Mul(scale, hn::ConvertTo(df, q)), df, y + e);
        }
      }
    }
  } else {
    const float d = LoadF16Scale(blk), dmin = LoadF16Scale(blk + 2);
    uint8_t sc[8], m[8];
    UnpackScaleMinK4(blk + offsetof(BlockQ4_K, scales), sc, m);
    const uint8_t* qs =
        blk + (T == DType::kQ4_K ? offsetof(BlockQ4_K, qs) : offsetof(BlockQ5_K, qs));
    const uint8_t* qh = T == DType::kQ5_K ? blk + offsetof(BlockQ5_K, qh) : nullptr;
    for (int j = 0; j < 4; ++j) {
      for (int half = 0; half < 2; ++half) {
        const int s = 2 * j + half;
        DequantizeQ45Group(qs + 32 * j, 4 * half, qh, s, d * static_cast<float>(sc[s]),
                           dmin * static_cast<float>(m[s]), y + 32 * s);
      }
    }
  }
}

// One q5_0 / q5_1 block -> 32 floats: (q - 16) d or q d + m (exact products, see above).
template <DType T>
HWY_INLINE void DequantizeQ5Block(const uint8_t* blk, float* y) {
  const KTagF df;
  const hn::RebindToSigned<KTagF> di;
  const hn::Rebind<uint8_t, KTagF> du8;
  const size_t n = hn::Lanes(df);
  constexpr int kOff = kQ5QhOffset<T>;
  const auto d = hn::Set(df, LoadF16Scale(blk));
  const auto m = hn::Set(df, T == DType::kQ5_1 ? LoadF16Scale(blk + 2) : 0.0f);
  uint32_t qh;
  std::memcpy(&qh, blk + kOff, 4);
  const uint8_t* qs = blk + kOff + 4;
  const auto offset = hn::Set(di, T == DType::kQ5_0 ? 16 : 0);
  const auto iota = hn::Iota(di, 0);
  const auto bits = hn::Set(di, static_cast<int32_t>(qh));
  for (size_t j = 0; j < 16; j += n) {
    const auto bytes = hn::PromoteTo(di, hn::LoadU(du8, qs + j));
    // Bit j of qh for element j, bit j + 16 for element j + 16, moved to bit 4.
    const auto jv = hn::Add(iota, hn::Set(di, static_cast<int32_t>(j)));
    const auto h_lo = hn::ShiftLeft<4>(hn::And(hn::Shr(bits, jv), hn::Set(di, 1)));
    const auto h_hi =
        hn::ShiftLeft<4>(hn::And(hn::Shr(bits, hn::Add(jv, hn::Set(di, 16))), hn::Set(di, 1)));
    const auto lo = hn::Sub(hn::Or(hn::And(bytes, hn::Set(di, 0x0F)), h_lo), offset);
    const auto hi = hn::Sub(hn::Or(hn::ShiftRight<4>(bytes), h_hi), offset);
    hn::StoreU(hn::Add(hn::Mul(hn::ConvertTo(df, lo), d), m), df, y + j);
    hn::StoreU(hn::Add(hn::Mul(hn::ConvertTo(df, hi), d), m), df, y + j + 16);
  }
}

// Returns false for dtypes without kernels here.
inline bool KDequantizeImpl(DType t, const uint8_t* src, int64_t n, float* dst) {
  const int64_t nb = n / kQK_K;
  switch (t) {
    case DType::kQ5_0:
      for (int64_t b = 0; b < n / 32; ++b)
        DequantizeQ5Block<DType::kQ5_0>(src + b * kQ5BlockBytes<DType::kQ5_0>, dst + b * 32);
      return true;
    case DType::kQ5_1:
      for (int64_t b = 0; b < n / 32; ++b)
        DequantizeQ5Block<DType::kQ5_1>(src + b * kQ5BlockBytes<DType::kQ5_1>, dst + b * 32);
      return true;
    case DType::kQ4_K:
      for (int64_t b = 0; b < nb; ++b)
        DequantizeSuperBlock<DType::kQ4_K>(src + b * 144, dst + b * kQK_K);
      return true;
    case DType::kQ5_K:
      for (int64_t b = 0; b < nb; ++b)
        DequantizeSuperBlock<DType::kQ5_K>(src + b * 176, dst + b * kQK_K);
      return true;
    case DType::kQ6_K:
      for (int64_t b = 0; b < nb; ++b)
        DequantizeSuperBlock<DType::kQ6_K>(src + b * 210, dst + b * kQK_K);
      return true;
    default:
      return false;
  }
}

// ---------------------------------------------------------------------------------------------
// Dot products.

#if KILN_KQUANT_X86

// Per-super-block weight scales shared by the R activation rows, kept in registers:
// q4_K/q5_K: sc = the 8 6-bit scales as bytes 0-7, m = the 8 mins as int16; q6_K: sc = the 16
// int8 scales.
struct KScales {
  __m128i sc;
  __m128i m;
};

template <DType T>
HWY_INLINE KScales LoadScales(const uint8_t* blk) {
  if constexpr (T == DType::kQ6_K) {
    return {_mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + offsetof(BlockQ6_K, scales))),
            _mm_setzero_si128()};
  } else {
    // The 6-bit unpacking of kquant.h on 4 bytes at a time (words of scales[0-3], [4-7], [8-11]).
    uint32_t w[3];
    std::memcpy(w, blk + offsetof(BlockQ4_K, scales), 12);
    const uint32_t sc_lo = w[0] & 0x3F3F3F3Fu, m_lo = w[1] & 0x3F3F3F3Fu;
    const uint32_t sc_hi = (w[2] & 0x0F0F0F0Fu) | (((w[0] >> 6) & 0x03030303u) << 4);
    const uint32_t m_hi = ((w[2] >> 4) & 0x0F0F0F0Fu) | (((w[1] >> 6) & 0x03030303u) << 4);
    return {
        _mm_setr_epi32(static_cast<int>(sc_lo), static_cast<int>(sc_hi), 0, 0),
        _mm_cvtepu8_epi16(_mm_setr_epi32(static_cast<int>(m_lo), static_cast<int>(m_hi), 0, 0))};
  }
}

// Unsigned weight quants of elements 64 j .. 64 j + 31 (w0) and 64 j + 32 .. 64 j + 63 (w1).
template <DType T>
HWY_INLINE void Unpack64(const uint8_t* blk, int j, __m256i& w0, __m256i& w1) {
  const __m256i m4 = _mm256_set1_epi8(0x0F);
  if constexpr (T == DType::kQ6_K) {
    const int h = j / 2;
    const uint8_t* ql = blk + offsetof(BlockQ6_K, ql) + 64 * h;
    const __m256i qh = _mm256_loadu_si256(
        reinterpret_cast<const __m256i*>(blk + offsetof(BlockQ6_K, qh) + 32 * h));
    const __m256i l0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(ql));
    const __m256i l1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(ql + 32));
    const __m256i m30 = _mm256_set1_epi8(0x30);
    if (j % 2 == 0) {  // groups i = 0, 1: low nibbles, qh bits 0-1 and 2-3
      w0 = _mm256_or_si256(_mm256_and_si256(l0, m4),
                           _mm256_and_si256(_mm256_slli_epi16(qh, 4), m30));
      w1 = _mm256_or_si256(_mm256_and_si256(l1, m4),
                           _mm256_and_si256(_mm256_slli_epi16(qh, 2), m30));
    } else {  // groups i = 2, 3: high nibbles, qh bits 4-5 and 6-7
      w0 = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l0, 4), m4),
                           _mm256_and_si256(qh, m30));
      w1 = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l1, 4), m4),
                           _mm256_and_si256(_mm256_srli_epi16(qh, 2), m30));
    }
  } else {
    const uint8_t* qs =
        blk + (T == DType::kQ4_K ? offsetof(BlockQ4_K, qs) : offsetof(BlockQ5_K, qs));
    const __m256i raw = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(qs + 32 * j));
    w0 = _mm256_and_si256(raw, m4);
    w1 = _mm256_and_si256(_mm256_srli_epi16(raw, 4), m4);
    if constexpr (T == DType::kQ5_K) {
      const __m256i qh =
          _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + offsetof(BlockQ5_K, qh)));
      const __m256i one = _mm256_set1_epi8(1);
      // Bits 2 j and 2 j + 1 of each byte, moved to bit 4 (values 0/1 per byte, so the 16-bit
      // shift left by 4 stays inside the byte).
      const __m256i h0 = _mm256_and_si256(_mm256_srl_epi16(qh, _mm_cvtsi32_si128(2 * j)), one);
      const __m256i h1 = _mm256_and_si256(_mm256_srl_epi16(qh, _mm_cvtsi32_si128(2 * j + 1)), one);
      w0 = _mm256_or_si256(w0, _mm256_slli_epi16(h0, 4));
      w1 = _mm256_or_si256(w1, _mm256_slli_epi16(h1, 4));
    }
  }
}

// int16 scales of one 32-element group g: lanes 0-7 scale the elements 32 g .. 32 g + 15,
// lanes 8-15 the next 16 (matching the int16 pair sums of maddubs over the group's 32 bytes).
template <DType T>
HWY_INLINE __m256i GroupScales(const KScales& s, int g) {
  if constexpr (T == DType::kQ6_K) {  // scales 2 g and 2 g + 1
    const __m128i pick = _mm_unpacklo_epi64(_mm_set1_epi8(static_cast<char>(2 * g)),
                                            _mm_set1_epi8(static_cast<char>(2 * g + 1)));
    return _mm256_cvtepi8_epi16(_mm_shuffle_epi8(s.sc, pick));
  } else {  // scale g for all 32
    return _mm256_cvtepu8_epi16(_mm_shuffle_epi8(s.sc, _mm_set1_epi8(static_cast<char>(g))));
  }
}

HWY_INLINE float HorizontalSum256(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

// int32 lane k of the 4 (q4_K / q5_K): m_2k (bsum_4k + bsum_4k+1) + m_2k+1 (bsum_4k+2 +
// bsum_4k+3), the lane split of llama.cpp's AVX2 kernels.
HWY_INLINE __m128i MinSums(const KScales& s, const BlockQ8_K& xb) {
  const __m256i bsums = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xb.bsums));
  const __m128i pairs =
      _mm_hadd_epi16(_mm256_castsi256_si128(bsums), _mm256_extracti128_si256(bsums, 1));
  return _mm_madd_epi16(s.m, pairs);
}

#if HWY_TARGET == HWY_AVX2

// Integer main sums of one super-block against R activation blocks: 8 int32 lanes per row.
template <DType T, int R>
HWY_INLINE void SuperBlockSums(const uint8_t* blk, const KScales& s, const BlockQ8_K* const* xb,
                               __m256i (&sumi)[R]) {
  for (int j = 0; j < 4; ++j) {
    __m256i w0, w1;
    Unpack64<T>(blk, j, w0, w1);
    const __m256i s0 = GroupScales<T>(s, 2 * j), s1 = GroupScales<T>(s, 2 * j + 1);
    for (int r = 0; r < R; ++r) {
      const int8_t* q = xb[r]->qs + 64 * j;
      const __m256i x0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(q));
      const __m256i x1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(q + 32));
      __m256i p0 = _mm256_maddubs_epi16(w0, x0), p1 = _mm256_maddubs_epi16(w1, x1);
      if constexpr (T == DType::kQ6_K) {  // (q - 32) x pair sums: subtract 32 x pair sums
        const __m256i m32 = _mm256_set1_epi8(32);
        p0 = _mm256_sub_epi16(p0, _mm256_maddubs_epi16(m32, x0));
        p1 = _mm256_sub_epi16(p1, _mm256_maddubs_epi16(m32, x1));
      }
      p0 = _mm256_madd_epi16(p0, s0);
      p1 = _mm256_madd_epi16(p1, s1);
      sumi[r] = _mm256_add_epi32(sumi[r], _mm256_add_epi32(p0, p1));
    }
  }
}

HWY_INLINE __m256 ToFloat(__m256i v) { return _mm256_cvtepi32_ps(v); }

#else  // AVX3, AVX3_DL: 64 elements per step in 512-bit registers.

// The super-block's scales as int16 words, widened once: q4_K / q5_K words 0-7, q6_K 0-15
// (the words above are never selected by StepScales).
template <DType T>
HWY_INLINE __m512i WideScales(const KScales& s) {
  if constexpr (T == DType::kQ6_K) return _mm512_castsi256_si512(_mm256_cvtepi8_epi16(s.sc));
  return _mm512_castsi128_si512(_mm_cvtepu8_epi16(s.sc));
}

// GroupScales of groups 2 j and 2 j + 1 side by side (the scales of elements 64 j .. 64 j +
// 63's int16 pair sums): one word permutation of WideScales. Word i takes scale 2 j + i / 16
// (q4_K / q5_K) or 4 j + i / 8 (q6_K, 16 elements per scale).
template <DType T>
HWY_INLINE __m512i StepScales(__m512i wide, int j) {
  alignas(64) static constexpr auto kIdx = [] {
    std::array<std::array<int16_t, 32>, 4> idx{};
    for (int jj = 0; jj < 4; ++jj) {
      for (int i = 0; i < 32; ++i) {
        idx[jj][i] = static_cast<int16_t>(T == DType::kQ6_K ? 4 * jj + i / 8 : 2 * jj + i / 16);
      }
    }
    return idx;
  }();
  return _mm512_permutexvar_epi16(_mm512_load_si512(kIdx[j].data()), wide);
}

// Elements 64 j .. 64 j + 63 as unsigned quants in one register (Unpack64's w0 and w1 side by
// side). q4_K and q6_K build both halves at once from broadcast loads and per-half shift
// counts; q5_K joins Unpack64's two halves.
template <DType T>
HWY_INLINE __m512i Unpack64Wide(const uint8_t* blk, int j) {
  if constexpr (T == DType::kQ6_K) {
    // Unpack64's q6_K steps on both halves at once: ql's 64 bytes (w0's 32, then w1's) and qh's
    // 32 in both halves, shifted per half (even j: left by 4 / 2; odd j: right by 0 / 2).
    const int h = j / 2;
    const __m512i l = _mm512_loadu_si512(blk + offsetof(BlockQ6_K, ql) + 64 * h);
    const __m512i qh = _mm512_broadcast_i64x4(_mm256_loadu_si256(
        reinterpret_cast<const __m256i*>(blk + offsetof(BlockQ6_K, qh) + 32 * h)));
    const __m512i by2 = _mm512_inserti64x4(_mm512_setzero_si512(), _mm256_set1_epi16(2), 1);
    const __m512i lo = j % 2 == 0 ? l : _mm512_srli_epi16(l, 4);
    const __m512i hi = j % 2 == 0
                           ? _mm512_sllv_epi16(qh, _mm512_sub_epi16(_mm512_set1_epi16(4), by2))
                           : _mm512_srlv_epi16(qh, by2);
    return _mm512_or_si512(_mm512_and_si512(lo, _mm512_set1_epi8(0x0F)),
                           _mm512_and_si512(hi, _mm512_set1_epi8(0x30)));
  } else if constexpr (T == DType::kQ4_K) {
    // The 32 bytes in both halves; the upper half's words shifted right by 4 (high nibbles).
    const __m256i raw = _mm256_loadu_si256(
        reinterpret_cast<const __m256i*>(blk + offsetof(BlockQ4_K, qs) + 32 * j));
    const __m512i shifts = _mm512_inserti64x4(_mm512_setzero_si512(), _mm256_set1_epi16(4), 1);
    return _mm512_and_si512(_mm512_srlv_epi16(_mm512_broadcast_i64x4(raw), shifts),
                            _mm512_set1_epi8(0x0F));
  } else {
    __m256i w0, w1;
    Unpack64<T>(blk, j, w0, w1);
    return _mm512_inserti64x4(_mm512_castsi256_si512(w0), w1, 1);
  }
}

template <DType T, int R>
HWY_INLINE void SuperBlockSums(const uint8_t* blk, const KScales& s, const BlockQ8_K* const* xb,
                               __m256i (&sumi)[R]) {
  __m512i acc[R];
  for (int r = 0; r < R; ++r) acc[r] = _mm512_setzero_si512();
  const __m512i wide = WideScales<T>(s);
  for (int j = 0; j < 4; ++j) {
    const __m512i w = Unpack64Wide<T>(blk, j);
    const __m512i scales = StepScales<T>(wide, j);
    for (int r = 0; r < R; ++r) {
      const __m512i x = _mm512_loadu_si512(xb[r]->qs + 64 * j);
      __m512i pairs = _mm512_maddubs_epi16(w, x);
      if constexpr (T == DType::kQ6_K) {  // (q - 32) x pair sums
        pairs = _mm512_sub_epi16(pairs, _mm512_maddubs_epi16(_mm512_set1_epi8(32), x));
      }
#if HWY_TARGET == HWY_AVX3_DL
      acc[r] = _mm512_dpwssd_epi32(acc[r], pairs, scales);
#else
      acc[r] = _mm512_add_epi32(acc[r], _mm512_madd_epi16(pairs, scales));
#endif
    }
  }
  for (int r = 0; r < R; ++r) {
    sumi[r] = _mm256_add_epi32(sumi[r], _mm256_add_epi32(_mm512_castsi512_si256(acc[r]),
                                                         _mm512_extracti64x4_epi64(acc[r], 1)));
  }
}

HWY_INLINE __m256 ToFloat(__m256i v) { return _mm256_cvtepi32_ps(v); }

#endif

HWY_INLINE float HorizontalSum128(__m128 v) {
  v = _mm_add_ps(v, _mm_movehl_ps(v, v));
  return _mm_cvtss_f32(_mm_add_ss(v, _mm_movehdup_ps(v)));
}

// y[r * y_stride] = dot(w_row, activation row r) for r < R. The f32 steps are those of
// llama.cpp's AVX2 kernels, on the same int32 lanes: per super-block acc += (d_x d) sumi (8
// lanes); the mins -(d_x dmin) sum m bsum go to 4 lanes (q4_K) or one float (q5_K).
template <DType T, int R>
HWY_INLINE void KDotTile(const uint8_t* w_row, const KActsView& x, int64_t r0, float* y,
                         int64_t y_stride) {
  const int64_t nb = x.blocks_per_row();
  __m256 acc[R];
  __m128 acc_min[R];  // q4_K: 4 lanes; q5_K: lane 0
  for (int r = 0; r < R; ++r) {
    acc[r] = _mm256_setzero_ps();
    acc_min[r] = _mm_setzero_ps();
  }
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* blk = w_row + b * kKBlockBytes<T>;
    const KScales s = LoadScales<T>(blk);
    const BlockQ8_K* xb[R];
    __m256i sumi[R];
    for (int r = 0; r < R; ++r) {
      xb[r] = x.Row(r0 + r) + b;
      sumi[r] = _mm256_setzero_si256();
    }
    SuperBlockSums<T, R>(blk, s, xb, sumi);
    const float d = LoadF16Scale(T == DType::kQ6_K ? blk + offsetof(BlockQ6_K, d) : blk);
    for (int r = 0; r < R; ++r) {
      acc[r] = _mm256_fmadd_ps(_mm256_set1_ps(xb[r]->d * d), ToFloat(sumi[r]), acc[r]);
    }
    if constexpr (T != DType::kQ6_K) {
      const float dmin = LoadF16Scale(blk + 2);
      for (int r = 0; r < R; ++r) {
        const __m128i mins = MinSums(s, *xb[r]);
        const __m128 neg = _mm_set1_ps(-xb[r]->d * dmin);
        if constexpr (T == DType::kQ4_K) {
          acc_min[r] = _mm_fmadd_ps(neg, _mm_cvtepi32_ps(mins), acc_min[r]);
        } else {
          const __m128i h = _mm_hadd_epi32(_mm_hadd_epi32(mins, mins), mins);
          acc_min[r] = _mm_fmadd_ss(neg, _mm_cvtepi32_ps(h), acc_min[r]);
        }
      }
    }
  }
  for (int r = 0; r < R; ++r) {
    const float mins = T == DType::kQ4_K ? HorizontalSum128(acc_min[r]) : _mm_cvtss_f32(acc_min[r]);
    y[r * y_stride] = HorizontalSum256(acc[r]) + mins;
  }
}

// The 32 unsigned 5-bit quants of a q5_0 / q5_1 block in element order.
template <DType T>
HWY_INLINE __m256i UnpackQ5(const uint8_t* blk) {
  constexpr int kOff = kQ5QhOffset<T>;
  const __m128i raw = _mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + kOff + 4));
  const __m256i nibbles = _mm256_and_si256(
      _mm256_inserti128_si256(_mm256_castsi128_si256(raw), _mm_srli_epi16(raw, 4), 1),
      _mm256_set1_epi8(0x0F));
  uint32_t qh;
  std::memcpy(&qh, blk + kOff, 4);
  // Byte i takes byte i / 8 of qh, keeps bit i % 8, and becomes 0x10 where it is set.
  const __m256i spread =
      _mm256_shuffle_epi8(_mm256_set1_epi32(static_cast<int>(qh)),
                          _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2,
                                           2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3));
  const __m256i bit = _mm256_set1_epi64x(0x8040201008040201LL);
  const __m256i set = _mm256_cmpeq_epi8(_mm256_and_si256(spread, bit), bit);
  return _mm256_or_si256(nibbles, _mm256_and_si256(set, _mm256_set1_epi8(0x10)));
}

// q5_0 / q5_1 rows against R rows of q8_0 / q8_1 activations (one block per step), with the
// int32 lanes and f32 steps of llama.cpp's AVX2 kernels: q5_0 multiplies |q - 16| by x signed
// like q - 16; q5_1 adds m_w s_x to one float.
template <DType T, int R>
HWY_INLINE void Q5DotTile(const uint8_t* w_row, const ActsView& x, int64_t r0, float* y,
                          int64_t y_stride) {
  constexpr int kB = kQ5BlockBytes<T>;
  const int64_t nb = x.blocks();
  __m256 acc[R];
  __m128 acc_min[R];  // lane 0 (q5_1)
  for (int r = 0; r < R; ++r) {
    acc[r] = _mm256_setzero_ps();
    acc_min[r] = _mm_setzero_ps();
  }
  const __m256i ones = _mm256_set1_epi16(1);
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* blk = w_row + b * kB;
    __m256i w = UnpackQ5<T>(blk), w_abs = w;
    if constexpr (T == DType::kQ5_0) {
      w = _mm256_sub_epi8(w, _mm256_set1_epi8(16));
      w_abs = _mm256_sign_epi8(w, w);
    }
    const float d = LoadF16Scale(blk);
    for (int r = 0; r < R; ++r) {
      const int64_t i = (r0 + r) * nb + b;  // block index in x
      __m256i xq = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x.qs + i * kQBlock));
      if constexpr (T == DType::kQ5_0) xq = _mm256_sign_epi8(xq, w);
      const __m256i p = _mm256_madd_epi16(_mm256_maddubs_epi16(w_abs, xq), ones);
      acc[r] = _mm256_fmadd_ps(_mm256_set1_ps(d * x.ds[2 * i]), _mm256_cvtepi32_ps(p), acc[r]);
      if constexpr (T == DType::kQ5_1) {
        acc_min[r] = _mm_fmadd_ss(_mm_set_ss(LoadF16Scale(blk + 2)), _mm_set_ss(x.ds[2 * i + 1]),
                                  acc_min[r]);
      }
    }
  }
  for (int r = 0; r < R; ++r) {
    y[r * y_stride] = HorizontalSum256(acc[r]) + _mm_cvtss_f32(acc_min[r]);
  }
}

#else  // not x86: the scalar twins

template <DType T, int R>
HWY_INLINE void KDotTile(const uint8_t* w_row, const KActsView& x, int64_t r0, float* y,
                         int64_t y_stride) {
  for (int r = 0; r < R; ++r) y[r * y_stride] = scalar::KQuantDotRow(T, w_row, x, r0 + r);
}

template <DType T, int R>
HWY_INLINE void Q5DotTile(const uint8_t* w_row, const ActsView& x, int64_t r0, float* y,
                          int64_t y_stride) {
  for (int r = 0; r < R; ++r) y[r * y_stride] = scalar::Q5DotRow(T, w_row, x, r0 + r);
}

#endif  // KILN_KQUANT_X86

// Rows of x per tile (each weight super-block is unpacked once per tile).
inline constexpr int kKTileRows = 4;
// Weight bytes per cache block: all x tiles sweep over them while they stay in L2.
inline constexpr uint64_t kKWeightBlockBytes = 256 * 1024;

template <DType T, int R>
HWY_INLINE void KTileColumn(const KMatMulArgs& a, int64_t r0, int64_t b0, int64_t b1) {
  const Matrix& w = *a.w;
  for (int64_t n = b0; n < b1; ++n) {
    float* y = a.y + r0 * w.rows + n;
    if constexpr (T == DType::kQ5_0 || T == DType::kQ5_1) {
      Q5DotTile<T, R>(w.data + n * w.row_bytes, a.acts, r0, y, w.rows);
    } else {
      KDotTile<T, R>(w.data + n * w.row_bytes, a.kacts, r0, y, w.rows);
    }
  }
}

// y[:, n0:n1] for one worker's range of output rows.
template <DType T>
HWY_INLINE void KMatMulRows(const KMatMulArgs& a, int64_t n0, int64_t n1) {
  const int64_t block_rows =
      std::max<int64_t>(1, static_cast<int64_t>(kKWeightBlockBytes / a.w->row_bytes));
  for (int64_t b0 = n0; b0 < n1; b0 += block_rows) {
    const int64_t b1 = std::min(n1, b0 + block_rows);
    int64_t r = 0;
    for (; r + kKTileRows <= a.m; r += kKTileRows) KTileColumn<T, kKTileRows>(a, r, b0, b1);
    switch (a.m - r) {
      case 3:
        KTileColumn<T, 3>(a, r, b0, b1);
        break;
      case 2:
        KTileColumn<T, 2>(a, r, b0, b1);
        break;
      case 1:
        KTileColumn<T, 1>(a, r, b0, b1);
        break;
      default:
        break;
    }
  }
}

// ---------------------------------------------------------------------------------------------
// q8_K activations (kquant.h), bit-identical to scalar::QuantizeActsQ8K: the same products
// iscale * x, rounded half to even (Round, the default rounding mode), and the same first
// element of largest magnitude (found by value once the largest magnitude is known).

HWY_INLINE void QuantizeQ8KBlock(const float* xb, BlockQ8_K& b) {
  const hn::ScalableTag<float> df;
  const hn::RebindToSigned<decltype(df)> di;
  const size_t n = hn::Lanes(df);
  auto vmax = hn::Zero(df);
  auto finite = hn::Ne(vmax, hn::Set(df, 1.0f));  // all true
  for (size_t j = 0; j < kQK_K; j += n) {
    const auto ax = hn::Abs(hn::LoadU(df, xb + j));
    finite = hn::And(finite, hn::Lt(ax, hn::Set(df, std::numeric_limits<float>::infinity())));
    vmax = hn::Max(vmax, ax);
  }
  const float amax = hn::GetLane(hn::MaxOfLanes(df, vmax));
  int first = 0;
  while (first < kQK_K && std::fabs(xb[first]) != amax) ++first;
  const float iscale = first < kQK_K ? -127.0f / xb[first] : 0.0f;
  if (!hn::AllTrue(df, finite) || amax == 0.0f || first == kQK_K || !std::isfinite(iscale)) {
    // NaN or infinity (Max would not skip NaN as the scalar comparisons do), all zero, or a
    // largest magnitude so small that -127 / max overflows: the scalar twin decides.
    const KActsView one{kQK_K, &b};
    scalar::QuantizeActsQ8K(xb, 1, one);
    return;
  }
  const auto vscale = hn::Set(df, iscale), v127 = hn::Set(df, 127.0f);
  alignas(64) int32_t q[kQK_K];
  for (size_t j = 0; j < kQK_K; j += n) {
    const auto v = hn::Min(hn::Round(hn::Mul(vscale, hn::LoadU(df, xb + j))), v127);
    hn::Store(hn::ConvertTo(di, v), di, q + j);
  }
  for (int j = 0; j < kQK_K; ++j) b.qs[j] = static_cast<int8_t>(q[j]);
  for (int g = 0; g < kQK_K / 16; ++g) {
    auto sum = hn::Zero(di);
    for (size_t j = 0; j < 16; j += n) sum = hn::Add(sum, hn::Load(di, q + 16 * g + j));
    b.bsums[g] = static_cast<int16_t>(hn::GetLane(hn::SumOfLanes(di, sum)));
  }
  b.d = 1.0f / iscale;
}

inline void QuantizeActsQ8KImpl(const float* x, int64_t rows, const KActsView& out) {
  const int64_t blocks = rows * out.blocks_per_row();
  for (int64_t i = 0; i < blocks; ++i) QuantizeQ8KBlock(x + i * kQK_K, out.blocks[i]);
}

// The panels are 256-bit code. AVX3_DL runs them for q5_0 / q5_1, where they beat its row
// kernels on Zen 4 (Qwen2.5-0.5B Q4_K_M, mostly q5_0: prefill 137-183 -> 174-258 tok/s, decode
// 54-68 -> 63-92 in alternated runs), and keeps its VNNI row kernels for q4_K / q6_K, which
// prefilled Llama-3.2-1B Q4_K_M faster than the panels in three of three rounds and decoded it
// the same (docs/benchmarks.md, "K-quant mixes on Zen 4").
#if HWY_TARGET == HWY_AVX2 || HWY_TARGET == HWY_AVX3_DL
#define KILN_KPANELS 1
#include "kernels/kpanel_avx2-inl.h"
#else
#define KILN_KPANELS 0
#endif

// Whether this target runs weights of type t on the panels of kpanel_avx2-inl.h.
inline constexpr bool UsesKPanels(DType t) {
  if (!KILN_KPANELS) return false;
  const bool q5 = t == DType::kQ5_0 || t == DType::kQ5_1;
  return q5 || (HWY_TARGET == HWY_AVX2 && (t == DType::kQ4_K || t == DType::kQ6_K));
}

// Bytes of w packed for this target's kernels (0: this target reads the stored layout).
inline uint64_t KPackedBytesImpl(const Matrix& w) {
#if KILN_KPANELS
  if (!UsesKPanels(w.dtype)) return 0;
  if (w.dtype == DType::kQ4_K) return KPanelBytes<DType::kQ4_K>(w);
  if (w.dtype == DType::kQ6_K) return KPanelBytes<DType::kQ6_K>(w);
  if (w.dtype == DType::kQ5_0) return KPanelBytes<DType::kQ5_0>(w);
  if (w.dtype == DType::kQ5_1) return KPanelBytes<DType::kQ5_1>(w);
#endif
  (void)w;
  return 0;
}

inline void KPackImpl(const Matrix& w, uint8_t* dst) {
#if KILN_KPANELS
  if (!UsesKPanels(w.dtype)) return;
  if (w.dtype == DType::kQ4_K) PackKPanelMatrix<DType::kQ4_K>(w, dst);
  if (w.dtype == DType::kQ6_K) PackKPanelMatrix<DType::kQ6_K>(w, dst);
  if (w.dtype == DType::kQ5_0) PackKPanelMatrix<DType::kQ5_0>(w, dst);
  if (w.dtype == DType::kQ5_1) PackKPanelMatrix<DType::kQ5_1>(w, dst);
#else
  (void)w;
  (void)dst;
#endif
}

// Runs y[:, n0:n1) of weights of type T: on the panels where this target uses them.
template <DType T>
HWY_INLINE void KMatMulRowsOf(const KMatMulArgs& a, int64_t n0, int64_t n1) {
#if KILN_KPANELS
  if constexpr (UsesKPanels(T)) {
    if (a.panels) {
      KPanelMatMulRows<T>(a, n0, n1);
      return;
    }
  }
#endif
  KMatMulRows<T>(a, n0, n1);
}

inline void KMatMulRowsImpl(const KMatMulArgs& a, int64_t n0, int64_t n1) {
  switch (a.w->dtype) {
    case DType::kQ4_K:
      KMatMulRowsOf<DType::kQ4_K>(a, n0, n1);
      break;
    case DType::kQ5_K:
      KMatMulRows<DType::kQ5_K>(a, n0, n1);
      break;
    case DType::kQ6_K:
      KMatMulRowsOf<DType::kQ6_K>(a, n0, n1);
      break;
    case DType::kQ5_0:
      KMatMulRowsOf<DType::kQ5_0>(a, n0, n1);
      break;
    case DType::kQ5_1:
      KMatMulRowsOf<DType::kQ5_1>(a, n0, n1);
      break;
    default:
      break;
  }
}

#undef KILN_KPANELS

}  // namespace kiln::kernels::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // KILN_KERNELS_KQUANT_INL_H_
