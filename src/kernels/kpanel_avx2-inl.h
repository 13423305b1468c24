// AVX2 MatMul for q4_K / q6_K weights against q8_K activations and q5_0 / q5_1 weights against
// q8_0 / q8_1 activations, on 8-row panels (included by kquant-inl.h in its AVX2 and AVX3_DL
// passes; AVX3_DL uses them for q5_0 / q5_1 only, see UsesKPanels there; the other targets keep
// the row kernels): layouts, packing and the loops over panels; the per-block kernels and their
// numerics are in kpanel_blocks_avx2-inl.h.
//
// Panel layout. A panel is 8 consecutive weight rows (output columns) of nb blocks (256-element
// super-blocks, or 32-element q5 blocks); block b of a panel sits at b * kKPanelBlockBytes<T>.
// Quant vectors hold, in dword lane c, 4 stored bytes of row c:
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
//   q5_0 (176 bytes) / q5_1 (192 bytes), exactly the stored rows' bytes:
//     [0, 128)      vector d < 4 = qs[4 d ..]: low nibbles are elements 4 d .. + 3, high nibbles
//                   elements 16 + 4 d .. + 3
//     [128, 160)    lane c = row c's qh (bit j: bit 4 of element j)
//     [160, 176)    the 8 rows' f16 d (q5_1: then [176, 192) their f16 m)
//
// Why: the row kernels unpack every super-block of every row alone (scale shuffles, 32-element
// spans, one horizontal step per row); here one activation dword broadcast to all lanes,
// maddubs'd against one weight vector, advances 8 rows by 4 elements, and scales, mins and the
// f32 step are shared by 8 rows.
//
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
inline constexpr int kStoredBlockBytes = kIsQ5<T> ? kQ5BlockBytes<T> : kKBlockBytes<T>;
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
      GatherDwords(blk + kQ5QhOffset<T> + 4, rb, 4, out);
      GatherDwords(blk + kQ5QhOffset<T>, rb, 1, out + kQ5HighOffset);
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

#include "kernels/kpanel_blocks_avx2-inl.h"

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
