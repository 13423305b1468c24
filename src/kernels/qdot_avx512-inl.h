// AVX-512 quantized dot tiles, two 32-element blocks per 512-bit step (included by qdot-inl.h).
// AVX3_DL uses VNNI vpdpbusd (u8 x s8 -> int32, no intermediate saturation); AVX3 uses the
// maddubs/madd pair (|pair| <= 2 * 128 * 127 fits int16). Only 512-bit VNNI is used: Highway
// 1.0.3 compiles AVX3_DL with "avxvnni", and GCC would encode 256-bit vpdpbusd as VEX AVX-VNNI,
// which Zen 4 and Ice Lake lack.
// No include guard: qdot-inl.h includes it once per AVX3 / AVX3_DL pass.

HWY_BEFORE_NAMESPACE();
namespace kiln::kernels::HWY_NAMESPACE {

// acc + 16 int32 partial sums of u[j] * s[j] (u unsigned, s signed bytes; 4 products per lane).
HWY_INLINE __m512i DotU8I8(__m512i acc, __m512i u, __m512i s) {
#if HWY_TARGET == HWY_AVX3_DL
  return _mm512_dpbusd_epi32(acc, u, s);
#else
  const __m512i pairs = _mm512_maddubs_epi16(u, s);
  return _mm512_add_epi32(acc, _mm512_madd_epi16(pairs, _mm512_set1_epi16(1)));
#endif
}

// Weight quants of blocks b and b + 1 laid out like their 64 activation quants:
// 128-bit lanes [b: 0-15 | b: 16-31 | b+1: 0-15 | b+1: 16-31]. `single` repeats block b
// (its upper half then meets zero activations).
template <DType T>
HWY_INLINE __m512i WeightPair(const uint8_t* blk0, bool single) {
  const uint8_t* q0 = blk0 + kQuantsOffset<T>;
  const uint8_t* q1 = single ? q0 : q0 + kBlockBytes<T>;
  if (T == DType::kQ8_0) {
    const __m256i lo = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(q0));
    const __m256i hi = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(q1));
    return _mm512_inserti64x4(_mm512_zextsi256_si512(lo), hi, 1);
  }
  // Broadcast each block's 16 nibble bytes twice, then shift the odd 128-bit lanes by 4 bits
  // (64-bit shifts: the bits pulled in from the next byte are masked off).
  const __m256i b0 =
      _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(q0)));
  const __m256i b1 =
      _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(q1)));
  const __m512i both = _mm512_inserti64x4(_mm512_zextsi256_si512(b0), b1, 1);
  const __m512i shifted = _mm512_srlv_epi64(both, _mm512_set_epi64(4, 4, 0, 0, 4, 4, 0, 0));
  return _mm512_and_si512(shifted, _mm512_set1_epi8(0x0F));
}

// A weight pair ready for PairDot: unsigned bytes, and for q8_0 the lanes where w < 0
// (q8_0 multiplies |w| by x negated there).
struct UnsignedPair {
  __m512i u;
  __mmask64 negative;
};

template <DType T>
HWY_INLINE UnsignedPair PrepareWeights(const uint8_t* blk0, bool single) {
  const __m512i wq = WeightPair<T>(blk0, single);
  if (T != DType::kQ8_0) return {wq, 0};
  return {_mm512_abs_epi8(wq), _mm512_movepi8_mask(wq)};
}

// Exact integer dot of a weight pair with blocks b, b + 1 of row r of x: 16 int32 partial sums,
// lanes 0-7 for block b and 8-15 for b + 1 (zero when `single`).
template <DType T>
HWY_INLINE __m512i PairDot(const UnsignedPair& w, const ActsView& x, int64_t r, int64_t b,
                           bool single) {
  const int8_t* xq = x.qs + r * x.k + b * kQBlock;
  __m512i xv = single ? _mm512_maskz_loadu_epi8(0xFFFFFFFFull, xq) : _mm512_loadu_si512(xq);
  if (T == DType::kQ8_0) xv = _mm512_mask_sub_epi8(xv, w.negative, _mm512_setzero_si512(), xv);
  __m512i init = _mm512_setzero_si512();
  if (T == DType::kQ4_0) {  // sum((n - 8) q) = sum(n q) - 8 sum(q): start lanes 0, 8 at -8 sum
    const int32_t* s = x.sums + r * x.blocks() + b;
    const __m128i sums =
        single ? _mm_cvtsi32_si128(s[0]) : _mm_loadl_epi64(reinterpret_cast<const __m128i*>(s));
    const __m512i idx = _mm512_set_epi32(0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0);
    const __m512i spread =
        _mm512_maskz_permutexvar_epi32(single ? 0x0001 : 0x0101, idx, _mm512_zextsi128_si512(sums));
    init = _mm512_sub_epi32(init, _mm512_slli_epi32(spread, 3));
  }
  return DotU8I8(init, w.u, xv);
}

// Scale products of 8 blocks: lanes 2i, 2i + 1 = {d_w d_x, m_w s_x} of block b + i (m_w = 0
// unless q4_1). One gather and one conversion serve all 8 blocks.
template <DType T>
HWY_INLINE __m512 ScaleProducts8(const uint8_t* blk0, const float* x_ds) {
  constexpr int kB = kBlockBytes<T>;
  const __m256i offsets = _mm256_setr_epi32(0, kB, 2 * kB, 3 * kB, 4 * kB, 5 * kB, 6 * kB, 7 * kB);
  __m256i bits = _mm256_i32gather_epi32(reinterpret_cast<const int*>(blk0), offsets, 1);
  if (T != DType::kQ4_1) bits = _mm256_and_si256(bits, _mm256_set1_epi32(0xFFFF));
  return _mm512_mul_ps(_mm512_cvtph_ps(bits), _mm512_loadu_ps(x_ds));
}

// The same for blocks b, b + 1 (or b alone) in lanes 0-3, other lanes zero.
template <DType T>
HWY_INLINE __m512 ScaleProducts2(const uint8_t* blk0, const float* x_ds, bool single) {
  const int s1 = single ? 0 : static_cast<int>(BlockScaleBits<T>(blk0 + kBlockBytes<T>));
  const __m128i bits =
      _mm_insert_epi32(_mm_cvtsi32_si128(static_cast<int>(BlockScaleBits<T>(blk0))), s1, 1);
  const __m128 xds = single
                         ? _mm_castsi128_ps(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(x_ds)))
                         : _mm_loadu_ps(x_ds);
  return _mm512_zextps128_ps512(_mm_mul_ps(_mm_cvtph_ps(bits), xds));
}

// acc[r] += partial sums of the pair at blocks b, b + 1, each lane scaled by its block's
// d_w d_x, taken from lanes 4 * slot (block b) and 4 * slot + 2 (b + 1) of prod[r].
template <DType T, int R>
HWY_INLINE void PairStep(const uint8_t* blk0, const ActsView& x, int64_t b, bool single,
                         const __m512 (&prod)[R], int slot, __m512 (&acc)[R]) {
  const UnsignedPair w = PrepareWeights<T>(blk0, single);
  const __m512i idx =
      _mm512_add_epi32(_mm512_set_epi32(2, 2, 2, 2, 2, 2, 2, 2, 0, 0, 0, 0, 0, 0, 0, 0),
                       _mm512_set1_epi32(4 * slot));
  for (int r = 0; r < R; ++r) {
    const __m512 scale = _mm512_permutexvar_ps(idx, prod[r]);
    acc[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(PairDot<T>(w, x, r, b, single)), scale, acc[r]);
  }
}

// Blocks b..b+7: four pairs alternating between two accumulator sets (independent FMA chains).
// prefetch > 0: also prefetches the weight bytes that far ahead (the rows of a range are
// contiguous, so this runs ahead into the next rows, across 4 KiB pages where the hardware
// prefetcher stops).
template <DType T, int R>
HWY_INLINE void OctetStep(const uint8_t* w_row, const ActsView& x, int64_t b, __m512 (&acc)[2][R],
                          __m512 (&ms)[R], int64_t prefetch) {
  const uint8_t* blk = w_row + b * kBlockBytes<T>;
  if (prefetch > 0) {
    for (int line = 0; line < 8 * kBlockBytes<T>; line += 64) {
      _mm_prefetch(reinterpret_cast<const char*>(blk + prefetch + line), _MM_HINT_T0);
    }
  }
  __m512 prod[R];
  for (int r = 0; r < R; ++r) {
    prod[r] = ScaleProducts8<T>(blk, x.ds + 2 * (r * x.blocks() + b));
    if (T == DType::kQ4_1) ms[r] = _mm512_add_ps(ms[r], prod[r]);
  }
  for (int p = 0; p < 4; ++p) {
    PairStep<T, R>(blk + 2 * p * kBlockBytes<T>, x, b + 2 * p, false, prod, p, acc[p & 1]);
  }
}

template <DType T, int R>
HWY_INLINE void QDotTile(const uint8_t* w_row, const ActsView& x, float* y, int64_t y_stride,
                         int64_t prefetch = 0) {
  __m512 acc[2][R], ms[R];  // ms: odd lanes sum m_w s_x (q4_1)
  for (int r = 0; r < R; ++r) {
    acc[0][r] = acc[1][r] = ms[r] = _mm512_setzero_ps();
  }
  const int64_t nb = x.blocks();
  int64_t b = 0;
  for (; b + 8 <= nb; b += 8) OctetStep<T, R>(w_row, x, b, acc, ms, prefetch);
  for (; b < nb; b += 2) {
    const bool single = b + 1 == nb;
    const uint8_t* blk = w_row + b * kBlockBytes<T>;
    __m512 prod[R];
    for (int r = 0; r < R; ++r) {
      prod[r] = ScaleProducts2<T>(blk, x.ds + 2 * (r * nb + b), single);
      if (T == DType::kQ4_1) ms[r] = _mm512_add_ps(ms[r], prod[r]);
    }
    PairStep<T, R>(blk, x, b, single, prod, 0, acc[0]);
  }
  for (int r = 0; r < R; ++r) {
    float sum = _mm512_reduce_add_ps(_mm512_add_ps(acc[0][r], acc[1][r]));
    if (T == DType::kQ4_1) sum += _mm512_reduce_add_ps(_mm512_maskz_mov_ps(0xAAAA, ms[r]));
    y[r * y_stride] = sum;
  }
}

}  // namespace kiln::kernels::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();
