// AVX2 MatMul for q4_K weights against q8_K activations, on 8-row panels (included by
// kquant-inl.h in its AVX2 pass only; the other targets keep the row kernels there).
//
// Panel layout. A panel is 8 consecutive weight rows (output columns) of nsb 256-element
// super-blocks; super-block b of a panel sits at b * kKPanelBlockBytes (1184 bytes):
//   [0, 1024)     quants: vector v = 8 j + kk (chunk j < 4, kk < 8), lane (dword) c = stored bytes
//                 qs[32 j + 4 kk .. + 3] of row c: low nibbles are elements 64 j + 4 kk .. + 3
//                 (sub-block 2 j), high nibbles elements 64 j + 32 + 4 kk .. + 3 (sub-block 2 j + 1)
//   [1024, 1088)  6-bit scales unpacked to bytes: sc_s of row c at 8 s + c
//   [1088, 1152)  6-bit mins unpacked to bytes, in pairs: m_2t, m_2t+1 of row c at 16 t + 2 c
//   [1152, 1184)  the 8 rows' f16 d, then their 8 f16 dmin
// 32 bytes per super-block more than the stored rows (2.8%), for scales that load as vectors.
//
// Why: the row kernels unpack every super-block of every row alone (scale shuffles, 32-element
// spans, one horizontal step per row); here one activation dword broadcast to all lanes,
// maddubs'd against one weight vector, advances 8 rows by 4 elements, and scales, mins and the
// f32 step are shared by 8 rows.
//
// Numerics, per (x row r, weight row n), identical for every M, tile, lane, thread and panel
// source (packed at load, or packed per call into scratch from the stored rows):
//   S_s = sum over sub-block s of q * x in int16 (8 maddubs results of at most 2 * 15 * 127:
//         |S_s| <= 30480), I = sum_s sc_s S_s and M = sum_s m_s B_s (B_s = bsums[2 s] +
//         bsums[2 s + 1]) in int32, exact;
//   acc = fma(f32(I), f32(d) * d_x, acc), then acc = fma(-f32(M), f32(dmin) * d_x, acc), for
//   super-blocks b = 0, 1, ..., nsb - 1. y = acc.
// Against the scalar twin (scalar::KQuantDotRow) only the f32 steps differ; against llama.cpp's
// AVX2 kernel (8 lanes of partial sums per super-block) likewise.
// No include guard or namespace: kquant-inl.h includes it once, inside its AVX2 pass's namespace.

inline constexpr int kKPanelRows = 8;
inline constexpr int kKPanelScalesOffset = 1024;
inline constexpr int kKPanelMinsOffset = 1088;
inline constexpr int kKPanelDOffset = 1152;
inline constexpr int kKPanelBlockBytes = 1184;
// x rows per GEMM register tile, and per GEMM pass over the panels (their q8_K blocks stay in
// L2, as the q4_0 panels' activations do).
inline constexpr int kKPanelTileRows = 4;
inline constexpr int64_t kKPanelActsBytes = 256 * 1024;
// How far ahead of a decode panel's loads its stream is prefetched (bytes).
inline constexpr int64_t kKPanelPrefetchBytes = 2048;

HWY_INLINE int64_t KPanelStride(int64_t cols) {
  return (cols / kQK_K * kKPanelBlockBytes + 63) / 64 * 64;
}

HWY_INLINE uint64_t KPanelBytes(const Matrix& w) {
  const int64_t panels = (w.rows + kKPanelRows - 1) / kKPanelRows;
  return static_cast<uint64_t>(panels * KPanelStride(w.cols));
}

// Packs the panel of 8 stored q4_K rows at `rows` (stride rb) into `panel`.
HWY_INLINE void PackKPanel(const uint8_t* rows, int64_t rb, int64_t nsb, uint8_t* panel) {
  const __m256i row_offsets = _mm256_mullo_epi32(_mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7),
                                                 _mm256_set1_epi32(static_cast<int32_t>(rb)));
  for (int64_t b = 0; b < nsb; ++b) {
    const uint8_t* blk = rows + b * kKBlockBytes<DType::kQ4_K>;
    uint8_t* out = panel + b * kKPanelBlockBytes;
    for (int v = 0; v < 32; ++v) {
      const int* q = reinterpret_cast<const int*>(blk + 16 + 4 * v);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + 32 * v),
                          _mm256_i32gather_epi32(q, row_offsets, 1));
    }
    for (int c = 0; c < kKPanelRows; ++c) {
      const uint8_t* row = blk + c * rb;
      uint8_t sc[8], m[8];
      UnpackScaleMinK4(row + 4, sc, m);
      for (int s = 0; s < 8; ++s) out[kKPanelScalesOffset + 8 * s + c] = sc[s];
      for (int t = 0; t < 4; ++t) {
        out[kKPanelMinsOffset + 16 * t + 2 * c] = m[2 * t];
        out[kKPanelMinsOffset + 16 * t + 2 * c + 1] = m[2 * t + 1];
      }
      std::memcpy(out + kKPanelDOffset + 2 * c, row, 2);
      std::memcpy(out + kKPanelDOffset + 16 + 2 * c, row + 2, 2);
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
  const __m128i v = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(blk + kKPanelScalesOffset + 8 * s));
  return _mm256_cvtepu8_epi16(_mm_unpacklo_epi8(v, v));
}

// Keeps GCC from reassociating a chain of int16 sums into a tree (see qpanel_avx2-inl.h).
HWY_INLINE void KKeepOrder(__m256i& v) { asm("" : "+x"(v)); }

// acc[r] += super-block b of x rows r < R against panel super-block `blk`.
template <int R>
HWY_INLINE void KPanelBlock(const uint8_t* blk, const BlockQ8_K* const (&x)[R], int64_t b,
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
  const __m256 d = _mm256_cvtph_ps(
      _mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + kKPanelDOffset)));
  const __m256 dmin = _mm256_cvtph_ps(
      _mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + kKPanelDOffset + 16)));
  for (int r = 0; r < R; ++r) {
    const BlockQ8_K& xb = x[r][b];
    // B_s = bsums[2 s] + bsums[2 s + 1]: int16 lane s, so dword t holds the pair B_2t, B_2t+1.
    const __m128i bs = _mm_hadd_epi16(
        _mm_loadu_si128(reinterpret_cast<const __m128i*>(xb.bsums)),
        _mm_loadu_si128(reinterpret_cast<const __m128i*>(xb.bsums + 8)));
    alignas(16) int32_t pairs[4];
    _mm_store_si128(reinterpret_cast<__m128i*>(pairs), bs);
    __m256i msum = _mm256_setzero_si256();
    for (int t = 0; t < 4; ++t) {
      const __m256i m = _mm256_cvtepu8_epi16(
          _mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + kKPanelMinsOffset + 16 * t)));
      msum = _mm256_add_epi32(msum, _mm256_madd_epi16(m, _mm256_set1_epi32(pairs[t])));
    }
    const __m256 dx = _mm256_set1_ps(xb.d);
    acc[r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum[r]), _mm256_mul_ps(d, dx), acc[r]);
    acc[r] = _mm256_fnmadd_ps(_mm256_cvtepi32_ps(msum), _mm256_mul_ps(dmin, dx), acc[r]);
  }
}

// y[r * y_stride + c] = lane c of acc[r] for lanes [lo, hi), x rows r < R against one panel.
template <int R>
HWY_INLINE void KPanelTile(const uint8_t* panel, const KActsView& x, int64_t r0, int64_t prefetch,
                           float* y, int64_t y_stride, int lo, int hi) {
  const BlockQ8_K* rows[R];
  __m256 acc[R];
  for (int r = 0; r < R; ++r) {
    rows[r] = x.Row(r0 + r);
    acc[r] = _mm256_setzero_ps();
  }
  const int64_t nsb = x.blocks_per_row();
  for (int64_t b = 0; b < nsb; ++b) {
    const uint8_t* blk = panel + b * kKPanelBlockBytes;
    if (prefetch > 0) {
      for (int i = 0; i < kKPanelBlockBytes; i += 64) {
        _mm_prefetch(reinterpret_cast<const char*>(blk + prefetch + i), _MM_HINT_T0);
      }
    }
    KPanelBlock<R>(blk, rows, b, acc);
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
HWY_INLINE void KPanelRows(const uint8_t* panel, const KActsView& x, int64_t r0, int64_t r1,
                           int64_t prefetch, float* y, int64_t y_stride, int lo, int hi) {
  int64_t r = r0;
  for (; r + kKPanelTileRows <= r1; r += kKPanelTileRows) {
    KPanelTile<kKPanelTileRows>(panel, x, r, 0, y, y_stride, lo, hi);
  }
  if (r == r1) return;
  WithFewRows(r1 - r, [&](auto rr) {
    KPanelTile<decltype(rr)::value>(panel, x, r, prefetch, y, y_stride, lo, hi);
  });
}

// y[:, n0:n1) for q4_K weights, from panels packed at load (a.w->packed) or packed per panel
// into scratch from the stored rows.
inline void KPanelMatMulRows(const KMatMulArgs& a, int64_t n0, int64_t n1) {
  const Matrix& w = *a.w;
  const int64_t stride = KPanelStride(w.cols), rb = static_cast<int64_t>(w.row_bytes);
  const int64_t pass_rows = std::max<int64_t>(
      kKPanelTileRows, kKPanelActsBytes / (w.cols / kQK_K * static_cast<int64_t>(sizeof(BlockQ8_K))) /
                           kKPanelTileRows * kKPanelTileRows);
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
        PackKPanel(StoredPanelRows(w, n, kKPanelRows, cols, tail_mem), rb, w.cols / kQK_K,
                   scratch);
        panel = scratch;
      }
      KPanelRows(panel, a.kacts, p0, p1, prefetch, a.y + n, w.rows, lo, hi);
    }
  }
}

// Writes all of w's panels (KPanelBytes(w)) to dst, rows past the last zero.
inline void PackKPanelMatrix(const Matrix& w, uint8_t* dst) {
  const int64_t rb = static_cast<int64_t>(w.row_bytes), stride = KPanelStride(w.cols);
  std::vector<uint8_t> tail;
  for (int64_t n = 0; n < w.rows; n += kKPanelRows) {
    const int cols = static_cast<int>(std::min<int64_t>(kKPanelRows, w.rows - n));
    uint8_t* panel = dst + n / kKPanelRows * stride;
    std::memset(panel, 0, static_cast<size_t>(stride));
    PackKPanel(StoredPanelRows(w, n, kKPanelRows, cols, tail), rb, w.cols / kQK_K, panel);
  }
}
