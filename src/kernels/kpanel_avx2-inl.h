// AVX2 MatMul for q4_K and q6_K weights against q8_K activations, on 8-row panels (included by
// kquant-inl.h in its AVX2 pass only; the other targets keep the row kernels there).
//
// Panel layout. A panel is 8 consecutive weight rows (output columns) of nsb 256-element
// super-blocks; super-block b of a panel sits at b * kKPanelBlockBytes<T>. Quant vectors hold,
// in dword lane c, 4 stored bytes of row c:
//   q4_K (1184 bytes):
//     [0, 1024)     vector 8 j + kk (chunk j < 4, kk < 8) = qs[32 j + 4 kk ..]: low nibbles are
//                   elements 64 j + 4 kk .. + 3 (sub-block 2 j), high nibbles the same of
//                   sub-block 2 j + 1
//     [1024, 1088)  6-bit scales unpacked to bytes: sc_s of row c at 8 s + c
//     [1088, 1152)  6-bit mins unpacked to bytes, in pairs: m_2t, m_2t+1 of row c at 16 t + 2 c
//     [1152, 1184)  the 8 rows' f16 d, then their 8 f16 dmin
//     (32 bytes per super-block more than the stored rows: 2.8%, for scales that load as vectors)
//   q6_K (1680 bytes, exactly the stored rows' bytes):
//     [0, 1024)     vector i < 32 = ql[4 i ..]
//     [1024, 1536)  vector i < 16 = qh[4 i ..]
//     [1536, 1664)  int8 scales in pairs: scales[2 t], scales[2 t + 1] of row c at 16 t + 2 c
//     [1664, 1680)  the 8 rows' f16 d
//
// Why: the row kernels unpack every super-block of every row alone (scale shuffles, 32-element
// spans, one horizontal step per row); here one activation dword broadcast to all lanes,
// maddubs'd against one weight vector, advances 8 rows by 4 elements, and scales, mins and the
// f32 step are shared by 8 rows.
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
//   for super-blocks b = 0, 1, ..., nsb - 1; y = acc.
// Against the scalar twin (scalar::KQuantDotRow) only the f32 steps differ; against llama.cpp's
// AVX2 kernels (8 lanes of partial sums per super-block) likewise.
// No include guard or namespace: kquant-inl.h includes it once, inside its AVX2 pass's namespace.

inline constexpr int kKPanelRows = 8;
// q4_K offsets in a panel super-block.
inline constexpr int kQ4KScalesOffset = 1024;
inline constexpr int kQ4KMinsOffset = 1088;
inline constexpr int kQ4KDOffset = 1152;
// q6_K offsets in a panel super-block.
inline constexpr int kQ6KHighOffset = 1024;
inline constexpr int kQ6KScalesOffset = 1536;
inline constexpr int kQ6KDOffset = 1664;
// q5_0 / q5_1 offsets in a panel block.
inline constexpr int kQ5HighOffset = 128;
inline constexpr int kQ5DOffset = 160;
template <DType T>
inline constexpr bool kIsQ5 = T == DType::kQ5_0 || T == DType::kQ5_1;
template <DType T>
inline constexpr int kKPanelBlockBytes =
    T == DType::kQ4_K ? 1184 : (T == DType::kQ6_K ? 1680 : (T == DType::kQ5_0 ? 176 : 192));
// Elements per block, and stored bytes per block and row.
template <DType T>
inline constexpr int kKPanelBlockElems = kIsQ5<T> ? kQBlock : kQK_K;
template <DType T>
inline constexpr int kStoredBlockBytes = kIsQ5<T> ? (T == DType::kQ5_0 ? 22 : 24) : kKBlockBytes<T>;
// x rows per GEMM register tile (q6_K's and q5's split sums need more registers per row), and
// per GEMM pass over the panels (their activations stay in L2, as the q4_0 panels' do).
template <DType T>
inline constexpr int kKPanelTileRows = T == DType::kQ4_K ? 4 : 2;
inline constexpr int64_t kKPanelActsBytes = 256 * 1024;
// How far ahead of a decode panel's loads its stream is prefetched (bytes).
inline constexpr int64_t kKPanelPrefetchBytes = 2048;

template <DType T>
HWY_INLINE int64_t KPanelStride(int64_t cols) {
  return (cols / kKPanelBlockElems<T> * kKPanelBlockBytes<T> + 63) / 64 * 64;
}

template <DType T>
HWY_INLINE uint64_t KPanelBytes(const Matrix& w) {
  const int64_t panels = (w.rows + kKPanelRows - 1) / kKPanelRows;
  return static_cast<uint64_t>(panels * KPanelStride<T>(w.cols));
}

// out[32 v + 4 c ..] = the 4 bytes at src + c * rb + 4 v, for v < vectors, c < 8.
HWY_INLINE void GatherDwords(const uint8_t* src, int64_t rb, int vectors, uint8_t* out) {
  const __m256i row_offsets = _mm256_mullo_epi32(_mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7),
                                                 _mm256_set1_epi32(static_cast<int32_t>(rb)));
  for (int v = 0; v < vectors; ++v) {
    const int* q = reinterpret_cast<const int*>(src + 4 * v);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + 32 * v),
                        _mm256_i32gather_epi32(q, row_offsets, 1));
  }
}

// Packs the panel of 8 stored rows at `rows` (stride rb) into `panel`.
template <DType T>
HWY_INLINE void PackKPanel(const uint8_t* rows, int64_t rb, int64_t nsb, uint8_t* panel) {
  for (int64_t b = 0; b < nsb; ++b) {
    const uint8_t* blk = rows + b * kStoredBlockBytes<T>;
    uint8_t* out = panel + b * kKPanelBlockBytes<T>;
    if constexpr (kIsQ5<T>) {
      constexpr int kHigh = T == DType::kQ5_0 ? 2 : 4;  // qh after d (and m)
      GatherDwords(blk + kHigh + 4, rb, 4, out);
      GatherDwords(blk + kHigh, rb, 1, out + kQ5HighOffset);
      for (int c = 0; c < kKPanelRows; ++c) {
        std::memcpy(out + kQ5DOffset + 2 * c, blk + c * rb, 2);
        if constexpr (T == DType::kQ5_1)
          std::memcpy(out + kQ5DOffset + 16 + 2 * c, blk + c * rb + 2, 2);
      }
      continue;
    }
    if constexpr (T == DType::kQ4_K) {
      GatherDwords(blk + offsetof(BlockQ4_K, qs), rb, 32, out);
    } else {
      GatherDwords(blk + offsetof(BlockQ6_K, ql), rb, 32, out);
      GatherDwords(blk + offsetof(BlockQ6_K, qh), rb, 16, out + kQ6KHighOffset);
    }
    for (int c = 0; c < kKPanelRows; ++c) {
      const uint8_t* row = blk + c * rb;
      if constexpr (T == DType::kQ4_K) {
        uint8_t sc[8], m[8];
        UnpackScaleMinK4(row + offsetof(BlockQ4_K, scales), sc, m);
        for (int s = 0; s < 8; ++s) out[kQ4KScalesOffset + 8 * s + c] = sc[s];
        for (int t = 0; t < 4; ++t) {
          out[kQ4KMinsOffset + 16 * t + 2 * c] = m[2 * t];
          out[kQ4KMinsOffset + 16 * t + 2 * c + 1] = m[2 * t + 1];
        }
        std::memcpy(out + kQ4KDOffset + 2 * c, row + offsetof(BlockQ4_K, d), 2);
        std::memcpy(out + kQ4KDOffset + 16 + 2 * c, row + offsetof(BlockQ4_K, dmin), 2);
      } else {
        const uint8_t* sc = row + offsetof(BlockQ6_K, scales);
        for (int t = 0; t < 8; ++t) {
          out[kQ6KScalesOffset + 16 * t + 2 * c] = sc[2 * t];
          out[kQ6KScalesOffset + 16 * t + 2 * c + 1] = sc[2 * t + 1];
        }
        std::memcpy(out + kQ6KDOffset + 2 * c, row + offsetof(BlockQ6_K, d), 2);
      }
    }
  }
}

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

// Lane c, byte i of dword lane c: 0x10 where bit 4 h + i of byte `byte` of lane c is set (h = 0
// or 1: the low or high nibble of that byte).
HWY_INLINE __m256i Q5HighBits(__m256i qh, int byte, int h) {
  const int k = byte;
  const __m256i pick =
      _mm256_setr_epi8(k, k, k, k, 4 + k, 4 + k, 4 + k, 4 + k, 8 + k, 8 + k, 8 + k, 8 + k, 12 + k,
                       12 + k, 12 + k, 12 + k, k, k, k, k, 4 + k, 4 + k, 4 + k, 4 + k, 8 + k, 8 + k,
                       8 + k, 8 + k, 12 + k, 12 + k, 12 + k, 12 + k);
  const __m256i bit = _mm256_set1_epi32(h == 0 ? 0x08040201 : static_cast<int>(0x80402010u));
  const __m256i set = _mm256_cmpeq_epi8(_mm256_and_si256(_mm256_shuffle_epi8(qh, pick), bit), bit);
  return _mm256_and_si256(set, _mm256_set1_epi8(0x10));
}

// acc[r] += block b of x rows r0 + r (r < R) against q5_0 / q5_1 panel block `blk`:
// I = sum(q x) (q = 0..31; low and high halves of the block each summed in int16, at most
// 4 * 2 * 31 * 127), q5_0 then - 16 sum(x); acc = fma(f32(I), f32(d_w) d_x, acc), q5_1 then
// acc = fma(f32(m_w), s_x, acc).
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
template <DType T, int R, class Acts>
HWY_INLINE void KPanelTile(const uint8_t* panel, const Acts& x, int64_t r0, int64_t prefetch,
                           float* y, int64_t y_stride, int lo, int hi) {
  const BlockQ8_K* rows[R];
  __m256 acc[R];
  for (int r = 0; r < R; ++r) {
    if constexpr (!kIsQ5<T>) rows[r] = x.Row(r0 + r);
    acc[r] = _mm256_setzero_ps();
  }
  const int64_t blocks = x.k / kKPanelBlockElems<T>;
  for (int64_t b = 0; b < blocks; ++b) {
    const uint8_t* blk = panel + b * kKPanelBlockBytes<T>;
    if (prefetch > 0) {
      for (int i = 0; i < kKPanelBlockBytes<T>; i += 64) {
        _mm_prefetch(reinterpret_cast<const char*>(blk + prefetch + i), _MM_HINT_T0);
      }
    }
    if constexpr (kIsQ5<T>) {
      Q5PanelBlock<T, R>(blk, x, r0, b, acc);
    } else {
      KPanelBlock<T, R>(blk, rows, b, acc);
    }
  }
  for (int r = 0; r < R; ++r) {
    float* out = y + (r0 + r) * y_stride;
    if (lo == 0 && hi == kKPanelRows) {
      _mm256_storeu_ps(out, acc[r]);
    } else {
      alignas(32) float tmp[kKPanelRows];
      _mm256_store_ps(tmp, acc[r]);
      for (int c = lo; c < hi; ++c) out[c] = tmp[c];
    }
  }
}

// Activation rows [r0, r1) against one panel; y points at the panel's first column.
template <DType T, class Acts>
HWY_INLINE void KPanelRows(const uint8_t* panel, const Acts& x, int64_t r0, int64_t r1,
                           int64_t prefetch, float* y, int64_t y_stride, int lo, int hi) {
  int64_t r = r0;
  for (; r + kKPanelTileRows<T> <= r1; r += kKPanelTileRows<T>) {
    KPanelTile<T, kKPanelTileRows<T>>(panel, x, r, 0, y, y_stride, lo, hi);
  }
  if (r == r1) return;
  WithFewRows(r1 - r, [&](auto rr) {
    KPanelTile<T, decltype(rr)::value>(panel, x, r, prefetch, y, y_stride, lo, hi);
  });
}

// y[:, n0:n1) for q4_K / q6_K weights, from panels packed at load (a.w->packed) or packed per panel
// into scratch from the stored rows.
template <DType T>
void KPanelMatMulRows(const KMatMulArgs& a, int64_t n0, int64_t n1) {
  const Matrix& w = *a.w;
  const int64_t stride = KPanelStride<T>(w.cols), rb = static_cast<int64_t>(w.row_bytes);
  // Activation bytes per row: q8_K blocks, or q8_0 quants with their {d, s} and sums.
  const int64_t acts_row_bytes = kIsQ5<T>
                                     ? w.cols + w.cols / kQBlock * 12
                                     : w.cols / kQK_K * static_cast<int64_t>(sizeof(BlockQ8_K));
  constexpr int64_t kTile = kKPanelTileRows<T>;
  const int64_t pass_rows = std::max(kTile, kKPanelActsBytes / acts_row_bytes / kTile * kTile);
  const int64_t prefetch = a.m == 1 ? kKPanelPrefetchBytes : 0;
  thread_local std::vector<uint8_t> panel_mem, tail_mem;
  for (int64_t p0 = 0; p0 < a.m; p0 += pass_rows) {
    const int64_t p1 = std::min(a.m, p0 + pass_rows);
    for (int64_t n = n0 / kKPanelRows * kKPanelRows; n < n1; n += kKPanelRows) {
      const int lo = static_cast<int>(std::max<int64_t>(0, n0 - n));
      const int hi = static_cast<int>(std::min<int64_t>(kKPanelRows, n1 - n));
      const uint8_t* panel = nullptr;
      if (w.packed != nullptr) {
        panel = w.packed + n / kKPanelRows * stride;
      } else {
        uint8_t* scratch = AlignedScratch(panel_mem, static_cast<size_t>(stride));
        const int cols = static_cast<int>(std::min<int64_t>(kKPanelRows, w.rows - n));
        PackKPanel<T>(StoredPanelRows(w, n, kKPanelRows, cols, tail_mem), rb,
                      w.cols / kKPanelBlockElems<T>, scratch);
        panel = scratch;
      }
      if constexpr (kIsQ5<T>) {
        KPanelRows<T>(panel, a.acts, p0, p1, prefetch, a.y + n, w.rows, lo, hi);
      } else {
        KPanelRows<T>(panel, a.kacts, p0, p1, prefetch, a.y + n, w.rows, lo, hi);
      }
    }
  }
}

// Writes all of w's panels (KPanelBytes<T>(w)) to dst, rows past the last zero.
template <DType T>
void PackKPanelMatrix(const Matrix& w, uint8_t* dst) {
  const int64_t rb = static_cast<int64_t>(w.row_bytes), stride = KPanelStride<T>(w.cols);
  std::vector<uint8_t> tail;
  for (int64_t n = 0; n < w.rows; n += kKPanelRows) {
    const int cols = static_cast<int>(std::min<int64_t>(kKPanelRows, w.rows - n));
    uint8_t* panel = dst + n / kKPanelRows * stride;
    std::memset(panel, 0, static_cast<size_t>(stride));
    PackKPanel<T>(StoredPanelRows(w, n, kKPanelRows, cols, tail), rb, w.cols / kKPanelBlockElems<T>,
                  panel);
  }
}
