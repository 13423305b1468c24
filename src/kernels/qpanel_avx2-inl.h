// AVX2 MatMul for q8_0 / q4_0 / q4_1 weights against int8 activations, on 8-row panels
// (included by matmul-inl.h in its AVX2 pass only; AVX3_DL has qgemm_vnni-inl.h).
//
// Panel layout. A panel is 8 consecutive weight rows (output columns) of nb 32-element blocks;
// block b of a panel sits at b * kPanelBlockBytes: its quant vectors, then its scales.
//   q8_0: 8 vectors of 32 bytes; vector kk, lane (dword) c = quants 4kk..4kk+3 of row c.
//   q4_0 / q4_1: 4 vectors; vector d, lane c = stored bytes 4d..4d+3 of row c, whose low nibbles
//     are elements 4d..4d+3 and high nibbles elements 16+4d..16+4d+3 (split when loaded).
//   Then the 8 rows' f16 d_w (q4_1: then their 8 f16 m_w).
// So a panel block holds exactly its 8 rows' stored block bytes, a panel 8 * row_bytes (rounded
// up to 64), and decode reads each worker's weights as one contiguous stream.
//
// Why: with the stored layout one maddubs covers one row's 32 elements, and every block and row
// then pays its own madd, scale select, convert and FMA (about 16 instructions per block-row on
// Zen 3, compute-bound at 5 GB/s for q4_0). Here one activation dword broadcast to all lanes,
// maddubs'd against one weight vector, advances 8 rows by 4 elements, and the per-block tail
// (madd, convert, scale, FMA) is shared by 8 rows.
//
// Numerics, per (x row r, weight row n), identical for every M, tile, lane, thread and panel
// source (packed at load, or packed per call into scratch from the stored rows):
//   q4: I_b = sum(n q) in int16 (8 maddubs results of at most 2 * 15 * 127 each: |sum| <= 30480,
//       no saturation), widened by one madd; q4_0 then adds -8 sum(q) (exact).
//   q8_0: I_b = sum(|w| * (q with w's sign)) (sign trick), each maddubs widened at once (two
//       could overflow int16); exact.
//   acc = fma(f32(I_b), f32(d_w) * d_x, acc) for b = 0, 1, ..., nb - 1; q4_1: then
//   acc = fma(m_w, s_x, acc) in the same step. y = acc.
// Against the scalar twin (scalar::DotQuantRow) only the f32 summation order differs.
// No include guard: matmul-inl.h includes it once, in the AVX2 pass.

HWY_BEFORE_NAMESPACE();
namespace kiln::kernels::HWY_NAMESPACE {

inline constexpr int kPanelRows = 8;
template <DType T>
inline constexpr int kPanelQVecs = T == DType::kQ8_0 ? 8 : 4;
template <DType T>
inline constexpr int kPanelScaleOffset = 32 * kPanelQVecs<T>;
// Equal to kPanelRows * kBlockBytes<T>: the stored bytes of 8 rows' blocks.
template <DType T>
inline constexpr int kPanelBlockBytes = kPanelScaleOffset<T> + (T == DType::kQ4_1 ? 32 : 16);
// x rows per GEMM register tile (4 f32 accumulators and 4 integer sums in 16 registers).
inline constexpr int kPanelTileRows = 4;
// x rows per GEMM pass over the panels: a pass's activation quants stay in L2 (Zen 3: 512 KiB).
inline constexpr int64_t kPanelActsBytes = 256 * 1024;
// How far ahead of a decode panel's loads its stream is prefetched (bytes).
inline constexpr int64_t kQPanelPrefetchBytes = 2048;

HWY_INLINE int64_t PanelStride(int64_t row_bytes) {
  return QuantPanelStride(row_bytes, kPanelRows);
}

HWY_INLINE uint64_t PackedQuantBytes(const Matrix& w) { return QuantPanelBytes(w, kPanelRows); }

// Packs whole panels from 8 stored rows at `rows` (stride rb) into `panel` (the layout above).
template <DType T>
HWY_INLINE void PackPanel(const uint8_t* rows, int64_t rb, int64_t nb, uint8_t* panel) {
  const __m256i row_offsets = _mm256_mullo_epi32(_mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7),
                                                 _mm256_set1_epi32(static_cast<int32_t>(rb)));
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* blk = rows + b * kBlockBytes<T>;
    uint8_t* out = panel + b * kPanelBlockBytes<T>;
    for (int i = 0; i < kPanelQVecs<T>; ++i) {
      const int* q = reinterpret_cast<const int*>(blk + kQuantsOffset<T> + 4 * i);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + 32 * i),
                          _mm256_i32gather_epi32(q, row_offsets, 1));
    }
    uint8_t* scales = out + kPanelScaleOffset<T>;
    for (int c = 0; c < kPanelRows; ++c) {
      std::memcpy(scales + 2 * c, blk + c * rb, 2);
      if constexpr (T == DType::kQ4_1) std::memcpy(scales + 16 + 2 * c, blk + c * rb + 2, 2);
    }
  }
}

// Activation rows of a tile: quants at xq + r * k; q4_0's corrections -8 sum(q) at
// corr[r * nb + b]; {d_x, s_x} at xds[2 * (r * nb + b)].
struct PanelActs {
  const int8_t* xq;
  int64_t k, nb;
  const int32_t* corr;
  const float* xds;

  PanelActs Row(int64_t r) const {
    return {xq + r * k, k, nb, corr == nullptr ? nullptr : corr + r * nb, xds + 2 * r * nb};
  }
};

// Keeps the compiler from reassociating integer sums across this point: left alone, GCC turns
// a q4 block's chain of int16 adds into a tree that needs all of its maddubs results live at
// once, and the GEMM tile then spills to the stack (q8_0's int32 chains do better as trees).
HWY_INLINE void KeepOrder(__m256i& v) { asm("" : "+x"(v)); }

HWY_INLINE __m256i Broadcast4(const int8_t* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return _mm256_set1_epi32(v);
}

// Exact integer block dots I_b of x rows r < R against panel block `blk` (8 lanes each).
template <DType T, int R>
HWY_INLINE void BlockDots(const uint8_t* blk, const PanelActs& x, int64_t b, __m256i (&dots)[R]) {
  const auto wvec = [blk](int i) {
    return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + 32 * i));
  };
  const __m256i ones = _mm256_set1_epi16(1);
  if constexpr (T == DType::kQ8_0) {
    for (int kk = 0; kk < 8; ++kk) {
      const __m256i w = wvec(kk), w_abs = _mm256_abs_epi8(w);
      for (int r = 0; r < R; ++r) {
        const __m256i xs = _mm256_sign_epi8(Broadcast4(x.xq + r * x.k + b * kQBlock + 4 * kk), w);
        const __m256i p = _mm256_madd_epi16(_mm256_maddubs_epi16(w_abs, xs), ones);
        dots[r] = kk == 0 ? p : _mm256_add_epi32(dots[r], p);
      }
    }
  } else {
    // With few rows, low and high nibbles sum in separate int16 chains (shorter dependencies,
    // added at the end); more rows keep one chain each, to stay within 16 registers.
    constexpr bool kSplit = R <= 2;
    const __m256i nib = _mm256_set1_epi8(0x0F);
    __m256i lo_sum[R], hi_sum[R];
    for (int d = 0; d < 4; ++d) {
      const __m256i w = wvec(d);
      const __m256i lo = _mm256_and_si256(w, nib);
      const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(w, 4), nib);
      for (int r = 0; r < R; ++r) {
        const int8_t* xb = x.xq + r * x.k + b * kQBlock;
        const __m256i pl = _mm256_maddubs_epi16(lo, Broadcast4(xb + 4 * d));
        const __m256i ph = _mm256_maddubs_epi16(hi, Broadcast4(xb + 16 + 4 * d));
        if constexpr (kSplit) {
          lo_sum[r] = d == 0 ? pl : _mm256_add_epi16(lo_sum[r], pl);
          hi_sum[r] = d == 0 ? ph : _mm256_add_epi16(hi_sum[r], ph);
          KeepOrder(lo_sum[r]);
          KeepOrder(hi_sum[r]);
        } else {
          const __m256i both = _mm256_add_epi16(pl, ph);
          lo_sum[r] = d == 0 ? both : _mm256_add_epi16(lo_sum[r], both);
          KeepOrder(lo_sum[r]);
        }
      }
    }
    for (int r = 0; r < R; ++r) {
      const __m256i sum = kSplit ? _mm256_add_epi16(lo_sum[r], hi_sum[r]) : lo_sum[r];
      dots[r] = _mm256_madd_epi16(sum, ones);
      if constexpr (T == DType::kQ4_0) {
        dots[r] = _mm256_add_epi32(dots[r], _mm256_set1_epi32(x.corr[r * x.nb + b]));
      }
    }
  }
}

// acc[r] += block b of x rows r < R against panel block `blk`: the numerics of the file top.
template <DType T, int R>
HWY_INLINE void PanelBlock(const uint8_t* blk, const PanelActs& x, int64_t b, __m256 (&acc)[R]) {
  __m256i dots[R];
  BlockDots<T, R>(blk, x, b, dots);
  const uint8_t* scales = blk + kPanelScaleOffset<T>;
  const __m256 dw = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(scales)));
  for (int r = 0; r < R; ++r) {
    const float* ds = x.xds + 2 * (r * x.nb + b);
    const __m256 scale = _mm256_mul_ps(dw, _mm256_set1_ps(ds[0]));
    acc[r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dots[r]), scale, acc[r]);
    if constexpr (T == DType::kQ4_1) {
      const __m256 mw =
          _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(scales + 16)));
      acc[r] = _mm256_fmadd_ps(mw, _mm256_set1_ps(ds[1]), acc[r]);
    }
  }
}

// y[r * y_stride + c] = lane c of acc[r], for lanes [lo, hi) (0, 8 for a whole panel).
template <int R>
HWY_INLINE void StorePanel(const __m256 (&acc)[R], float* y, int64_t y_stride, int lo, int hi) {
  for (int r = 0; r < R; ++r) {
    float* out = y + r * y_stride;
    if (lo == 0 && hi == kPanelRows) {
      _mm256_storeu_ps(out, acc[r]);
    } else {
      alignas(32) float tmp[kPanelRows];
      _mm256_store_ps(tmp, acc[r]);
      for (int c = lo; c < hi; ++c) out[c] = tmp[c];
    }
  }
}

// x rows r < R against P panels (`stride` apart) from `panel`; results in acc[p][r].
// prefetch > 0: prefetches each panel's stream that many bytes ahead (decode from memory).
template <DType T, int R, int P>
HWY_INLINE void PanelTile(const uint8_t* panel, int64_t stride, const PanelActs& x,
                          int64_t prefetch, __m256 (&acc)[P][R]) {
  for (int p = 0; p < P; ++p) {
    for (int r = 0; r < R; ++r) acc[p][r] = _mm256_setzero_ps();
  }
  for (int64_t b = 0; b < x.nb; ++b) {
    for (int p = 0; p < P; ++p) {
      const uint8_t* blk = panel + p * stride + b * kPanelBlockBytes<T>;
      if (prefetch > 0) {
        for (int i = 0; i < kPanelBlockBytes<T>; i += 64) {
          _mm_prefetch(reinterpret_cast<const char*>(blk + prefetch + i), _MM_HINT_T0);
        }
      }
      PanelBlock<T, R>(blk, x, b, acc[p]);
    }
  }
}

// All `rows` x rows against one panel; y points at the panel's first column, lanes [lo, hi)
// are stored.
template <DType T>
HWY_INLINE void PanelAllRows(const uint8_t* panel, const PanelActs& x, int64_t rows, float* y,
                             int64_t y_stride, int lo, int hi) {
  int64_t r = 0;
  for (; r + kPanelTileRows <= rows; r += kPanelTileRows) {
    __m256 acc[1][kPanelTileRows];
    PanelTile<T, kPanelTileRows, 1>(panel, 0, x.Row(r), 0, acc);
    StorePanel(acc[0], y + r * y_stride, y_stride, lo, hi);
  }
  if (r == rows) return;
  WithFewRows(rows - r, [&](auto rr) {
    constexpr int R = decltype(rr)::value;
    __m256 acc[1][R];
    PanelTile<T, R, 1>(panel, 0, x.Row(r), 0, acc);
    StorePanel(acc[0], y + r * y_stride, y_stride, lo, hi);
  });
}

// Decode (one x row) from packed panels: pairs of whole panels, for two independent chains.
template <DType T>
HWY_INLINE void PackedDecodeRow(const MatMulArgs& a, const PanelActs& x, int64_t n0, int64_t n1) {
  const int64_t stride = PanelStride(static_cast<int64_t>(a.w->row_bytes));
  const int64_t ahead = a.prefetch ? kQPanelPrefetchBytes : 0;
  int64_t n = n0 / kPanelRows * kPanelRows;
  while (n < n1) {
    const uint8_t* panel = a.w->packed + n / kPanelRows * stride;
    const int lo = static_cast<int>(std::max<int64_t>(0, n0 - n));
    if (lo == 0 && n + 2 * kPanelRows <= n1) {
      __m256 acc[2][1];
      PanelTile<T, 1, 2>(panel, stride, x, ahead, acc);
      StorePanel(acc[0], a.y + n, 0, 0, kPanelRows);
      StorePanel(acc[1], a.y + n + kPanelRows, 0, 0, kPanelRows);
      n += 2 * kPanelRows;
    } else {
      __m256 acc[1][1];
      PanelTile<T, 1, 1>(panel, 0, x, ahead, acc);
      StorePanel(acc[0], a.y + n, 0, lo, static_cast<int>(std::min<int64_t>(kPanelRows, n1 - n)));
      n += kPanelRows;
    }
  }
}

// y[:, n0:n1) from panels packed at load (a.w->packed).
template <DType T>
void PackedPanelRows(const MatMulArgs& a, const PanelActs& x, int64_t n0, int64_t n1) {
  if (a.m == 1) {
    PackedDecodeRow<T>(a, x, n0, n1);
    return;
  }
  const int64_t n_out = a.w->rows, stride = PanelStride(static_cast<int64_t>(a.w->row_bytes));
  const int64_t pass_rows =
      std::max<int64_t>(kPanelTileRows, kPanelActsBytes / x.k / kPanelTileRows * kPanelTileRows);
  for (int64_t p0 = 0; p0 < a.m; p0 += pass_rows) {
    const int64_t rows = std::min(a.m, p0 + pass_rows) - p0;
    for (int64_t n = n0 / kPanelRows * kPanelRows; n < n1; n += kPanelRows) {
      const int lo = static_cast<int>(std::max<int64_t>(0, n0 - n));
      const int hi = static_cast<int>(std::min<int64_t>(kPanelRows, n1 - n));
      PanelAllRows<T>(a.w->packed + n / kPanelRows * stride, x.Row(p0), rows, a.y + p0 * n_out + n,
                      n_out, lo, hi);
    }
  }
}

// y[:, n0:n1) for q8_0 / q4_0 / q4_1 weights (one worker's share of the output columns).
template <DType T>
void QGemmRows(const MatMulArgs& a, int64_t n0, int64_t n1) {
  const ActsView& acts = a.acts;
  const int64_t nb = acts.blocks(), m = a.m;
  const int64_t rb = static_cast<int64_t>(a.w->row_bytes);
  // Per-thread scratch: q4_0's corrections, and a panel packed per call.
  thread_local std::vector<int32_t> corr_mem;
  thread_local std::vector<uint8_t> panel_mem, tail_mem;
  const int32_t* corr = nullptr;
  if constexpr (T == DType::kQ4_0) {
    if (corr_mem.size() < static_cast<size_t>(m * nb)) corr_mem.resize(m * nb);
    for (int64_t i = 0; i < m * nb; ++i) corr_mem[i] = -8 * acts.sums[i];
    corr = corr_mem.data();
  }
  const PanelActs x{acts.qs, acts.k, nb, corr, acts.ds};
  if (a.w->packed != nullptr) {
    PackedPanelRows<T>(a, x, n0, n1);
    return;
  }
  // Stored layout: each panel of rows n..n+7 packed into scratch, then run as packed.
  uint8_t* panel = AlignedScratch(panel_mem, static_cast<size_t>(PanelStride(rb)));
  for (int64_t n = n0; n < n1; n += kPanelRows) {
    const int cols = static_cast<int>(std::min<int64_t>(kPanelRows, n1 - n));
    PackPanel<T>(StoredPanelRows(*a.w, n, kPanelRows, cols, tail_mem), rb, nb, panel);
    PanelAllRows<T>(panel, x, m, a.y + n, a.w->rows, 0, cols);
  }
}

// Writes all of w's panels (ceil(rows / 8) of PanelStride(row_bytes) bytes) to dst, rows past
// the last zero.
template <DType T>
void PackQuantMatrix(const Matrix& w, uint8_t* dst) {
  const int64_t rb = static_cast<int64_t>(w.row_bytes), stride = PanelStride(rb);
  std::vector<uint8_t> tail;
  for (int64_t n = 0; n < w.rows; n += kPanelRows) {
    const int cols = static_cast<int>(std::min<int64_t>(kPanelRows, w.rows - n));
    uint8_t* panel = dst + n / kPanelRows * stride;
    PackPanel<T>(StoredPanelRows(w, n, kPanelRows, cols, tail), rb, w.cols / kQBlock, panel);
    std::memset(panel + kPanelRows * rb, 0, static_cast<size_t>(stride - kPanelRows * rb));
  }
}

}  // namespace kiln::kernels::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();
