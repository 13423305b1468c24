// Per-block kernels of the AVX2 K-quant / q5 panels (layouts in kpanel_avx2-inl.h, which
// includes this file): x rows against one panel block, into 8 f32 lanes (one per weight row).
//
// Numerics, per (x row r, weight row n), identical for every M, tile, lane, thread and panel
// source (packed at load, or packed per call into scratch from the stored rows), all integer
// sums exact:
//   q4_K: S_s = sum over sub-block s (32) of q x in int16 (8 maddubs results of at most
//         2 * 15 * 127: |S_s| <= 30480); I = sum_s sc_s S_s, M = sum_s m_s B_s (B_s = bsums[2 s]
//         + bsums[2 s + 1]) in int32; acc = fma(f32(I), f32(d) d_x, acc), then
//         acc = fma(-f32(M), f32(dmin) d_x, acc).
//   q6_K: S_s = sum over sub-block s (16) of q x (q = 0..63) in two int16 halves (2 maddubs
//         results each, <= 4 * 63 * 127); I = sum_s sc_s S_s - 32 sum_s sc_s bsums[s] in int32
//         (|I| < 2^29); acc = fma(f32(I), f32(d) d_x, acc).
//   q5_0 / q5_1: I = sum over the block of q x (q = 0..31: low and high halves each summed in
//         int16, at most 4 * 2 * 31 * 127), q5_0 then - 16 sum(x); acc = fma(f32(I), f32(d)
//         d_x, acc), q5_1 then acc = fma(f32(m), s_x, acc).
//   for blocks b = 0, 1, ..., nb - 1; y = acc.
// Against the scalar twins (scalar::KQuantDotRow, Q5DotRow) only the f32 steps differ; against
// llama.cpp's AVX2 kernels (8 lanes of partial sums per super-block) likewise.
//
// No include guard or namespace: included once, inside kquant-inl.h's AVX2 pass's namespace.

HWY_INLINE __m256i KBroadcast4(const int8_t* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return _mm256_set1_epi32(v);
}

// Lane c: sc_s of row c in both int16 halves (the madd operand of sub-block s).
HWY_INLINE __m256i KSubBlockScales(const uint8_t* blk, int s) {
  const __m128i v =
      _mm_loadl_epi64(reinterpret_cast<const __m128i*>(blk + kQ4KScalesOffset + 8 * s));
  return _mm256_cvtepu8_epi16(_mm_unpacklo_epi8(v, v));
}

// Keeps GCC from reassociating a chain of int16 sums into a tree (see qpanel_avx2-inl.h).
HWY_INLINE void KKeepOrder(__m256i& v) { asm("" : "+x"(v)); }

// acc[r] += super-block b of x rows r < R against q4_K panel super-block `blk`.
template <int R>
HWY_INLINE void Q4KPanelBlock(const uint8_t* blk, const BlockQ8_K* const (&x)[R], int64_t b,
                              __m256 (&acc)[R]) {
  const __m256i nib = _mm256_set1_epi8(0x0F);
  __m256i isum[R];
  for (int j = 0; j < 4; ++j) {
    const __m256i sc_lo = KSubBlockScales(blk, 2 * j), sc_hi = KSubBlockScales(blk, 2 * j + 1);
    __m256i lo_sum[R], hi_sum[R];
    for (int kk = 0; kk < 8; ++kk) {
      const __m256i w =
          _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + 32 * (8 * j + kk)));
      const __m256i lo = _mm256_and_si256(w, nib);
      const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(w, 4), nib);
      for (int r = 0; r < R; ++r) {
        const int8_t* xq = x[r][b].qs + 64 * j + 4 * kk;
        const __m256i pl = _mm256_maddubs_epi16(lo, KBroadcast4(xq));
        const __m256i ph = _mm256_maddubs_epi16(hi, KBroadcast4(xq + 32));
        lo_sum[r] = kk == 0 ? pl : _mm256_add_epi16(lo_sum[r], pl);
        hi_sum[r] = kk == 0 ? ph : _mm256_add_epi16(hi_sum[r], ph);
        KKeepOrder(lo_sum[r]);
        KKeepOrder(hi_sum[r]);
      }
    }
    for (int r = 0; r < R; ++r) {
      const __m256i part = _mm256_add_epi32(_mm256_madd_epi16(lo_sum[r], sc_lo),
                                            _mm256_madd_epi16(hi_sum[r], sc_hi));
      isum[r] = j == 0 ? part : _mm256_add_epi32(isum[r], part);
    }
  }
  const __m256 d =
      _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + kQ4KDOffset)));
  const __m256 dmin =
      _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + kQ4KDOffset + 16)));
  for (int r = 0; r < R; ++r) {
    const BlockQ8_K& xb = x[r][b];
    // B_s = bsums[2 s] + bsums[2 s + 1]: int16 lane s, so dword t holds the pair B_2t, B_2t+1.
    const __m128i bs =
        _mm_hadd_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(xb.bsums)),
                       _mm_loadu_si128(reinterpret_cast<const __m128i*>(xb.bsums + 8)));
    alignas(16) int32_t pairs[4];
    _mm_store_si128(reinterpret_cast<__m128i*>(pairs), bs);
    __m256i msum = _mm256_setzero_si256();
    for (int t = 0; t < 4; ++t) {
      const __m256i m = _mm256_cvtepu8_epi16(
          _mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + kQ4KMinsOffset + 16 * t)));
      msum = _mm256_add_epi32(msum, _mm256_madd_epi16(m, _mm256_set1_epi32(pairs[t])));
    }
    const __m256 dx = _mm256_set1_ps(xb.d);
    acc[r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum[r]), _mm256_mul_ps(d, dx), acc[r]);
    acc[r] = _mm256_fnmadd_ps(_mm256_cvtepi32_ps(msum), _mm256_mul_ps(dmin, dx), acc[r]);
  }
}

// acc[r] += super-block b of x rows r < R against q6_K panel super-block `blk`.
// Sub-block s (16 elements) = half h = s / 8, stream i = s % 8 / 2 and dwords kk = 4 (s % 2) ..
// + 3 of it: stream i takes the low (i < 2) or high nibbles of ql vector 16 h + 8 (i % 2) + kk
// and bits 2 i, 2 i + 1 of qh vector 8 h + kk, for elements 128 h + 32 i + 4 kk .. + 3.
template <int R>
HWY_INLINE void Q6KPanelBlock(const uint8_t* blk, const BlockQ8_K* const (&x)[R], int64_t b,
                              __m256 (&acc)[R]) {
  const auto vec = [blk](int offset) {
    return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + offset));
  };
  const __m256i nib = _mm256_set1_epi8(0x0F), hi2 = _mm256_set1_epi8(0x30);
  // Duplicate the low (high) int16 of each dword: scale pairs -> (sc_2t, sc_2t) ((sc_2t+1, ..)).
  const __m256i dup_lo = _mm256_setr_epi8(0, 1, 0, 1, 4, 5, 4, 5, 8, 9, 8, 9, 12, 13, 12, 13, 0, 1,
                                          0, 1, 4, 5, 4, 5, 8, 9, 8, 9, 12, 13, 12, 13);
  const __m256i dup_hi = _mm256_add_epi8(dup_lo, _mm256_set1_epi8(2));
  __m256i isum[R], csum[R];
  for (int t = 0; t < 8; ++t) {
    // Lane c: row c's scales[2 t], scales[2 t + 1] as int16.
    const __m256i pair = _mm256_cvtepi8_epi16(
        _mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + kQ6KScalesOffset + 16 * t)));
    for (int r = 0; r < R; ++r) {
      int32_t bsum_pair;
      std::memcpy(&bsum_pair, x[r][b].bsums + 2 * t, 4);
      const __m256i c = _mm256_madd_epi16(pair, _mm256_set1_epi32(bsum_pair));
      csum[r] = t == 0 ? c : _mm256_add_epi32(csum[r], c);
    }
    for (int half = 0; half < 2; ++half) {
      const int s = 2 * t + half, h = s / 8, i = s % 8 / 2, g = s % 2;
      const __m256i sc = _mm256_shuffle_epi8(pair, half == 0 ? dup_lo : dup_hi);
      __m256i part[R][2];
      for (int kk = 4 * g; kk < 4 * g + 4; ++kk) {
        const __m256i low = vec(32 * (16 * h + 8 * (i % 2) + kk));
        const __m256i high = vec(kQ6KHighOffset + 32 * (8 * h + kk));
        const __m256i lo4 =
            i < 2 ? _mm256_and_si256(low, nib) : _mm256_and_si256(_mm256_srli_epi16(low, 4), nib);
        const __m256i hi_bits = i == 0   ? _mm256_slli_epi16(high, 4)
                                : i == 1 ? _mm256_slli_epi16(high, 2)
                                : i == 2 ? high
                                         : _mm256_srli_epi16(high, 2);
        const __m256i q = _mm256_or_si256(lo4, _mm256_and_si256(hi_bits, hi2));
        for (int r = 0; r < R; ++r) {
          const __m256i p =
              _mm256_maddubs_epi16(q, KBroadcast4(x[r][b].qs + 128 * h + 32 * i + 4 * kk));
          const int j = (kk - 4 * g) / 2;
          part[r][j] = kk % 2 == 0 ? p : _mm256_add_epi16(part[r][j], p);
        }
      }
      for (int r = 0; r < R; ++r) {
        const __m256i v =
            _mm256_add_epi32(_mm256_madd_epi16(part[r][0], sc), _mm256_madd_epi16(part[r][1], sc));
        isum[r] = s == 0 ? v : _mm256_add_epi32(isum[r], v);
      }
    }
  }
  const __m256 d =
      _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + kQ6KDOffset)));
  for (int r = 0; r < R; ++r) {
    const __m256i total = _mm256_sub_epi32(isum[r], _mm256_slli_epi32(csum[r], 5));
    acc[r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(total), _mm256_mul_ps(d, _mm256_set1_ps(x[r][b].d)),
                             acc[r]);
  }
}

// Lane c, byte i of dword lane c: 0x10 where bit 4 h + i of byte k of lane c is set (h = 0
// or 1: the low or high nibble of that byte).
HWY_INLINE __m256i Q5HighBits(__m256i qh, int k, int h) {
  const __m256i pick =
      _mm256_setr_epi8(k, k, k, k, 4 + k, 4 + k, 4 + k, 4 + k, 8 + k, 8 + k, 8 + k, 8 + k, 12 + k,
                       12 + k, 12 + k, 12 + k, k, k, k, k, 4 + k, 4 + k, 4 + k, 4 + k, 8 + k, 8 + k,
                       8 + k, 8 + k, 12 + k, 12 + k, 12 + k, 12 + k);
  const __m256i bit = _mm256_set1_epi32(h == 0 ? 0x08040201 : static_cast<int>(0x80402010u));
  const __m256i set = _mm256_cmpeq_epi8(_mm256_and_si256(_mm256_shuffle_epi8(qh, pick), bit), bit);
  return _mm256_and_si256(set, _mm256_set1_epi8(0x10));
}

// acc[r] += block b of x rows r0 + r (r < R) against q5_0 / q5_1 panel block `blk` (numerics
// at the file top).
template <DType T, int R>
HWY_INLINE void Q5PanelBlock(const uint8_t* blk, const ActsView& x, int64_t r0, int64_t b,
                             __m256 (&acc)[R]) {
  const int64_t nb = x.blocks();
  const __m256i nib = _mm256_set1_epi8(0x0F), ones = _mm256_set1_epi16(1);
  const __m256i qh = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + kQ5HighOffset));
  __m256i lo_sum[R], hi_sum[R];
  for (int d = 0; d < 4; ++d) {
    const __m256i w = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + 32 * d));
    // Elements 4 d + i take bit 4 d + i of qh, elements 16 + 4 d + i bit 16 + 4 d + i.
    const __m256i lo = _mm256_or_si256(_mm256_and_si256(w, nib), Q5HighBits(qh, d / 2, d % 2));
    const __m256i hi = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(w, 4), nib),
                                       Q5HighBits(qh, 2 + d / 2, d % 2));
    for (int r = 0; r < R; ++r) {
      const int8_t* xb = x.qs + ((r0 + r) * nb + b) * kQBlock;
      const __m256i pl = _mm256_maddubs_epi16(lo, KBroadcast4(xb + 4 * d));
      const __m256i ph = _mm256_maddubs_epi16(hi, KBroadcast4(xb + 16 + 4 * d));
      lo_sum[r] = d == 0 ? pl : _mm256_add_epi16(lo_sum[r], pl);
      hi_sum[r] = d == 0 ? ph : _mm256_add_epi16(hi_sum[r], ph);
      KKeepOrder(lo_sum[r]);
      KKeepOrder(hi_sum[r]);
    }
  }
  const __m256 dw =
      _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + kQ5DOffset)));
  for (int r = 0; r < R; ++r) {
    const int64_t i = (r0 + r) * nb + b;
    __m256i dots =
        _mm256_add_epi32(_mm256_madd_epi16(lo_sum[r], ones), _mm256_madd_epi16(hi_sum[r], ones));
    if constexpr (T == DType::kQ5_0) {
      dots = _mm256_add_epi32(dots, _mm256_set1_epi32(-16 * x.sums[i]));
    }
    acc[r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dots),
                             _mm256_mul_ps(dw, _mm256_set1_ps(x.ds[2 * i])), acc[r]);
    if constexpr (T == DType::kQ5_1) {
      const __m256 mw =
          _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + kQ5DOffset + 16)));
      acc[r] = _mm256_fmadd_ps(mw, _mm256_set1_ps(x.ds[2 * i + 1]), acc[r]);
    }
  }
}

template <DType T, int R>
HWY_INLINE void KPanelBlock(const uint8_t* blk, const BlockQ8_K* const (&x)[R], int64_t b,
                            __m256 (&acc)[R]) {
  if constexpr (T == DType::kQ4_K) {
    Q4KPanelBlock<R>(blk, x, b, acc);
  } else {
    Q6KPanelBlock<R>(blk, x, b, acc);
  }
}

// y[r * y_stride + c] = lane c of acc[r] for lanes [lo, hi), x rows r < R against one panel.
