// AVX2 quantized dot tiles, one 32-element block per step and the f16 scales of four blocks
// converted at once (included by qdot-inl.h).
// The signed x unsigned byte products use the maddubs/madd trick: maddubs(u8, s8) sums pairs
// into int16 (no saturation here: |pair| <= 2 * 128 * 127), madd(., 1) sums pairs into int32.
// No include guard: qdot-inl.h includes it once per AVX2 pass.

HWY_BEFORE_NAMESPACE();
namespace kiln::kernels::HWY_NAMESPACE {

// 16 bytes of nibbles -> 32 bytes in [0, 15]: low nibbles are elements 0..15, high 16..31.
HWY_INLINE __m256i ExpandNibbles(const uint8_t* qs) {
  const __m128i raw = _mm_loadu_si128(reinterpret_cast<const __m128i*>(qs));
  const __m256i both =
      _mm256_inserti128_si256(_mm256_castsi128_si256(raw), _mm_srli_epi16(raw, 4), 1);
  return _mm256_and_si256(both, _mm256_set1_epi8(0x0F));
}

// 8 int32 partial sums of u[j] * s[j] (u unsigned, s signed bytes).
HWY_INLINE __m256i DotU8I8(__m256i u, __m256i s) {
  return _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), _mm256_set1_epi16(1));
}

HWY_INLINE float HorizontalSum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

// Weight scales of blocks b..b+n-1 (n = 4, or 1 with the rest zero) as f32: lanes 2i, 2i + 1 =
// {d_w, m_w} of block b + i (m_w = 0 unless q4_1). One conversion serves 4 blocks and every x
// row of the tile.
template <DType T>
HWY_INLINE __m256 WeightScales(const uint8_t* blk0, int n) {
  constexpr int kB = kBlockBytes<T>;
  if (n == 1) {
    return _mm256_castps128_ps256(
        _mm_cvtph_ps(_mm_cvtsi32_si128(static_cast<int>(BlockScaleBits<T>(blk0)))));
  }
  const __m128i bits = _mm_setr_epi32(static_cast<int>(BlockScaleBits<T>(blk0)),
                                      static_cast<int>(BlockScaleBits<T>(blk0 + kB)),
                                      static_cast<int>(BlockScaleBits<T>(blk0 + 2 * kB)),
                                      static_cast<int>(BlockScaleBits<T>(blk0 + 3 * kB)));
  return _mm256_cvtph_ps(bits);
}

// Scale products {d_w d_x, m_w s_x} per block (lanes as WeightScales) for one x row.
HWY_INLINE __m256 ScaleProducts(__m256 w_scales, const float* x_ds, int n) {
  if (n == 1) {
    const __m128 xds = _mm_castsi128_ps(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(x_ds)));
    return _mm256_setr_m128(_mm_mul_ps(_mm256_castps256_ps128(w_scales), xds), _mm_setzero_ps());
  }
  return _mm256_mul_ps(w_scales, _mm256_loadu_ps(x_ds));
}

// acc[r] += partial sums of block b against row r of x, scaled by lane 2 * slot of prod[r].
template <DType T, int R>
HWY_INLINE void BlockStep(const uint8_t* blk, const ActsView& x, int64_t b, const __m256 (&prod)[R],
                          int slot, __m256 (&acc)[R]) {
  const uint8_t* qs = blk + kQuantsOffset<T>;
  // q8_0 and q4_0 weights are signed (q4_0: n - 8, once per block rather than a correction
  // of -8 sum(q) per x row, which costs a scalar load and a move to a vector register each):
  // multiply |w| by x carrying w's sign (x quants are in [-127, 127], so the sign flip cannot
  // overflow). q4_1's nibbles are unsigned as they are.
  constexpr bool kSigned = T != DType::kQ4_1;
  __m256i wq;
  if constexpr (T == DType::kQ8_0) {
    wq = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(qs));
  } else if constexpr (T == DType::kQ4_0) {
    wq = _mm256_sub_epi8(ExpandNibbles(qs), _mm256_set1_epi8(8));
  } else {
    wq = ExpandNibbles(qs);
  }
  const __m256i wu = kSigned ? _mm256_sign_epi8(wq, wq) : wq;
  const __m256i idx = _mm256_set1_epi32(2 * slot);
  for (int r = 0; r < R; ++r) {
    __m256i xq = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x.qs + r * x.k + b * kQBlock));
    if (kSigned) xq = _mm256_sign_epi8(xq, wq);
    const __m256i p = DotU8I8(wu, xq);
    const __m256 scale = _mm256_permutevar8x32_ps(prod[r], idx);
    acc[r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p), scale, acc[r]);
  }
}

// Blocks b..b+n-1 (n = 4 or 1); consecutive blocks alternate between U accumulator sets.
template <DType T, int R, int U>
HWY_INLINE void BlockGroup(const uint8_t* w_row, const ActsView& x, int64_t b, int n,
                           __m256 (&acc)[U][R], __m256 (&ms)[R]) {
  const uint8_t* blk = w_row + b * kBlockBytes<T>;
  const __m256 w_scales = WeightScales<T>(blk, n);
  __m256 prod[R];
  for (int r = 0; r < R; ++r) {
    prod[r] = ScaleProducts(w_scales, x.ds + 2 * (r * x.blocks() + b), n);
    if (T == DType::kQ4_1) ms[r] = _mm256_add_ps(ms[r], prod[r]);
  }
  for (int i = 0; i < n; ++i) {
    BlockStep<T, R>(blk + i * kBlockBytes<T>, x, b + i, prod, i, acc[i % U]);
  }
}

// Every row sums its blocks in U = 2 alternating chains whatever R is, so its result does not
// depend on the rows sharing the tile (batch invariance). Up to 4 rows share each expanded
// weight block (q4_1, which also keeps R m_w s_x sums, up to 2): more rows run as several
// tiles, to keep the accumulators in the 16 registers.
template <DType T, int R>
HWY_INLINE void QDotTile(const uint8_t* w_row, const ActsView& x, float* y, int64_t y_stride) {
  constexpr int kMaxRows = T == DType::kQ4_1 ? 2 : 4;
  if constexpr (R > kMaxRows) {
    QDotTile<T, kMaxRows>(w_row, x, y, y_stride);
    QDotTile<T, R - kMaxRows>(w_row, x.Row(kMaxRows), y + kMaxRows * y_stride, y_stride);
    return;
  }
  constexpr int U = 2;
  __m256 acc[U][R], ms[R];           // ms: odd lanes sum m_w s_x (q4_1)
  for (int r = 0; r < R; ++r) {
    for (int u = 0; u < U; ++u) acc[u][r] = _mm256_setzero_ps();
    ms[r] = _mm256_setzero_ps();
  }
  const int64_t nb = x.blocks();
  int64_t b = 0;
  for (; b + 4 <= nb; b += 4) BlockGroup<T, R, U>(w_row, x, b, 4, acc, ms);
  for (; b < nb; ++b) BlockGroup<T, R, U>(w_row, x, b, 1, acc, ms);
  for (int r = 0; r < R; ++r) {
    for (int u = 1; u < U; ++u) acc[0][r] = _mm256_add_ps(acc[0][r], acc[u][r]);
    float sum = HorizontalSum(acc[0][r]);
    if (T == DType::kQ4_1) {
      sum += HorizontalSum(_mm256_blend_ps(_mm256_setzero_ps(), ms[r], 0xAA));
    }
    y[r * y_stride] = sum;
  }
}

}  // namespace kiln::kernels::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();
