// AVX3_DL (AVX-512 VNNI) GEMM for q8_0 / q4_0 / q4_1 weights against int8 activations
// (included by matmul-inl.h in its AVX3_DL pass only; other targets keep qdot-inl.h's tiles).
//
// Panel layout. A panel is 16 consecutive weight rows (output columns) of nb 32-element blocks.
// Per block it has a quant group and a scale group:
//   q8_0 quant group: 8 vectors of 64 bytes; vector kk, lane c = quants 4kk..4kk+3 of row c + 128.
//   q4_0 / q4_1 quant group: 4 vectors; vector d, lane c = the 4 bytes of row c whose low nibbles
//     are elements 4d..4d+3 and high nibbles elements 16+4d..16+4d+3 (split when loaded).
//   scale group: the 16 rows' f16 d_w (q4_1: then their 16 f16 m_w).
// Blocks come in runs of kPanelRunBlocks (2 for q8_0 / q4_0, 1 for q4_1; the last run of a
// panel may be shorter): a run's quant groups, then its scale groups, so that runs are whole
// cache lines and a panel, and consecutive panels, are one contiguous stream in k order.
// So a panel holds exactly the bytes of its 16 rows (16 * row_bytes), rounded up to 64.
// Why one stream: a Zen 4 core reads one stream at 30 GB/s but four interleaved ones (quants and
// scales of two panels, the layout before) at 20 (bench/bandwidth_bench --streams 1,4).
// One vpdpbusd of a weight vector with activation quants 4kk..4kk+3 of row r broadcast to all
// lanes (signed) advances 16 dots at once, and after a block's 8 vectors each lane holds the
// exact integer block dot of its column; the activation side needs no shuffles.
// Where panels come from: weights packed once at load (Matrix::packed, PackQuantMatrix below; the
// model does this for every quantized matrix), else repacked per call from the stored GGUF
// layout (a 16 x 8 dword transpose): M > kDirectMaxRows packs each panel into a per-thread
// buffer and runs 8-row register tiles over it; M <= kDirectMaxRows (decode) uses the repacked
// registers directly (DirectTile).
//
// Numerics, per (x row r, weight row n), identical for every M, tile, panel lane and thread:
//   I_b = exact int32 block dot   (q8_0: sum((w + 128) q) - 128 sum q; q4_0: sum(n q) - 8 sum q;
//                                  q4_1: sum(n q))
//   acc = fma(f32(I_b), f32(d_w d_x), acc)       for b = 0, 1, ..., nb - 1 in order, acc = 0
//   q4_1: then acc = fma(m_w, s_x, acc) in the same step
// y = acc. Every op is lane-wise, so a row's result depends neither on the other rows sharing
// its register tile nor on the lane its column lands in (batch invariance). Against the scalar
// twin (scalar::DotQuantRow) only the f32 summation order differs.
// No include guard: matmul-inl.h includes it once, in the AVX3_DL pass. Its headers
// (<immintrin.h>, <vector>, <cstring>) are included by matmul.cc and qdot-inl.h above the
// target pragma (see matmul.cc).

HWY_BEFORE_NAMESPACE();
namespace kiln::kernels::HWY_NAMESPACE {

inline constexpr int kPanelRows = 16;
// Quant vectors per block of a panel, and the bytes of a block's quant and scale groups.
template <DType T>
inline constexpr int kPanelQVecs = T == DType::kQ8_0 ? 8 : 4;
template <DType T>
inline constexpr int kPanelQuantBytes = 64 * kPanelQVecs<T>;
template <DType T>
inline constexpr int kPanelScaleBytes = T == DType::kQ4_1 ? 64 : 32;
// x rows per register tile (8 f32 + 8 int32 accumulators).
inline constexpr int kGemmTileRows = 8;
// x rows per pass over the panels: keeps a pass's activation quants (rows x K bytes) in L2.
inline constexpr int64_t kGemmActsBytes = 512 * 1024;
// How far ahead of a packed panel's loads decode prefetches (bytes of the contiguous stream).
inline constexpr int64_t kPanelPrefetchBytes = 4096;

// Blocks per run of the panel layout (a run's quant groups, then its scale groups).
template <DType T>
inline constexpr int64_t kPanelRunBlocks = T == DType::kQ4_1 ? 1 : 2;

// Runs fn(b, quants, scales) for blocks b = 0 .. nb - 1 of a panel (P: const or mutable bytes),
// quants / scales pointing at block b's quant and scale groups. The one place that walks the
// run layout; pointers are stepped per run (offsets computed per block cost the GEMM 5-12%).
template <DType T, typename P, class F>
HWY_INLINE void ForEachPanelBlock(P* panel, int64_t nb, const F& fn) {
  constexpr int64_t kRun = kPanelRunBlocks<T>;
  constexpr int64_t kQ = kPanelQuantBytes<T>, kS = kPanelScaleBytes<T>;
  int64_t b = 0;
  P* run = panel;
  for (; b + kRun <= nb; b += kRun, run += kRun * (kQ + kS)) {
#pragma GCC unroll 2
    for (int64_t j = 0; j < kRun; ++j) fn(b + j, run + j * kQ, run + kRun * kQ + j * kS);
  }
  const int64_t rest = nb - b;  // a last, shorter run
  for (int64_t j = 0; j < rest; ++j) fn(b + j, run + j * kQ, run + rest * kQ + j * kS);
}

// Bytes from one panel to the next: its 16 rows' bytes, rounded up to a cache line.
HWY_INLINE int64_t PanelStride(int64_t row_bytes) {
  return QuantPanelStride(row_bytes, kPanelRows);
}

HWY_INLINE uint64_t PackedQuantBytes(const Matrix& w) { return QuantPanelBytes(w, kPanelRows); }

// Prefetches the panel stream's bytes [from, from + bytes) into L1 or L2.
HWY_INLINE void PrefetchPanelBytes(const uint8_t* from, int64_t bytes, bool to_l2) {
  for (int64_t i = 0; i < bytes; i += 64) {
    const char* line = reinterpret_cast<const char*>(from + i);
    if (to_l2) {
      _mm_prefetch(line, _MM_HINT_T1);
    } else {
      _mm_prefetch(line, _MM_HINT_T0);
    }
  }
}

// Block b of a panel's 16 rows in the panel layout (see the top of the file), in registers.
template <DType T>
struct RawBlock {
  __m512i q[kPanelQVecs<T>];
  __m256i d;  // 16 f16 d_w
  __m256i m;  // 16 f16 m_w (q4_1 only)
};

// Weight vector kk (0..7: quants 4kk..4kk+3 of each row, unsigned) of a block's quant vectors
// `qv` (q4: the nibble split happens here, so panels stay as small as the stored weights).
template <DType T, class Q>
HWY_INLINE __m512i QuantVector(const Q& qv, int kk) {
  if constexpr (T == DType::kQ8_0) {
    return qv(kk);
  } else {
    const __m512i nib = _mm512_set1_epi8(0x0F);
    const __m512i v = qv(kk & 3);
    return kk < 4 ? _mm512_and_si512(v, nib) : _mm512_and_si512(_mm512_srli_epi16(v, 4), nib);
  }
}

// Transposes block b of 16 stored rows (at p, p + rb, ..., p + 15 rb; p points at row 0's
// block) into the panel layout.
template <DType T>
HWY_INLINE void LoadRawBlock(const uint8_t* p, int64_t rb, const __m512i gather_idx,
                             RawBlock<T>& out) {
  constexpr int kQ = kQuantsOffset<T>;
  const uint8_t* q = p + kQ;
  if constexpr (T == DType::kQ8_0) {
    // A_c = [row c | row c + 4] (c < 4), [row c + 4 | row c + 8] (c >= 4), 8 dwords each.
    __m512i a[8];
    for (int c = 0; c < 8; ++c) {
      const int lo = c < 4 ? c : c + 4;
      const __m256i l = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(q + lo * rb));
      const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(q + (lo + 4) * rb));
      a[c] = _mm512_inserti64x4(_mm512_castsi256_si512(l), h, 1);
    }
    __m512i u[8];
    for (int g = 0; g < 2; ++g) {
      const __m512i* s = a + 4 * g;
      const __m512i t0 = _mm512_unpacklo_epi32(s[0], s[1]), t1 = _mm512_unpackhi_epi32(s[0], s[1]);
      const __m512i t2 = _mm512_unpacklo_epi32(s[2], s[3]), t3 = _mm512_unpackhi_epi32(s[2], s[3]);
      u[4 * g + 0] = _mm512_unpacklo_epi64(t0, t2);  // dwords 0 (128-bit lanes 0, 2), 4 (1, 3)
      u[4 * g + 1] = _mm512_unpackhi_epi64(t0, t2);  // 1, 5
      u[4 * g + 2] = _mm512_unpacklo_epi64(t1, t3);  // 2, 6
      u[4 * g + 3] = _mm512_unpackhi_epi64(t1, t3);  // 3, 7
    }
    const __m512i bias = _mm512_set1_epi8(static_cast<char>(0x80));
    for (int d = 0; d < 4; ++d) {
      out.q[d] = _mm512_xor_si512(_mm512_shuffle_i32x4(u[d], u[4 + d], 0x88), bias);
      out.q[d + 4] = _mm512_xor_si512(_mm512_shuffle_i32x4(u[d], u[4 + d], 0xDD), bias);
    }
  } else {
    // B_i = [row i | row i + 4 | row i + 8 | row i + 12], 4 dwords of nibbles each.
    __m512i bq[4];
    for (int i = 0; i < 4; ++i) {
      const auto ld = [&](int r) {
        return _mm_loadu_si128(reinterpret_cast<const __m128i*>(q + r * rb));
      };
      __m512i x = _mm512_castsi128_si512(ld(i));
      x = _mm512_inserti32x4(x, ld(i + 4), 1);
      x = _mm512_inserti32x4(x, ld(i + 8), 2);
      bq[i] = _mm512_inserti32x4(x, ld(i + 12), 3);
    }
    const __m512i t0 = _mm512_unpacklo_epi32(bq[0], bq[1]),
                  t1 = _mm512_unpackhi_epi32(bq[0], bq[1]);
    const __m512i t2 = _mm512_unpacklo_epi32(bq[2], bq[3]),
                  t3 = _mm512_unpackhi_epi32(bq[2], bq[3]);
    out.q[0] = _mm512_unpacklo_epi64(t0, t2);
    out.q[1] = _mm512_unpackhi_epi64(t0, t2);
    out.q[2] = _mm512_unpacklo_epi64(t1, t3);
    out.q[3] = _mm512_unpackhi_epi64(t1, t3);
  }
  // Scales: {d} or {d, m} as f16 at the start of each row's block.
  const __m512i bits = _mm512_i32gather_epi32(gather_idx, p, 1);
  out.d = _mm512_cvtepi32_epi16(bits);
  out.m = T == DType::kQ4_1 ? _mm512_cvtepi32_epi16(_mm512_srli_epi32(bits, 16))
                            : _mm256_setzero_si256();
}

HWY_INLINE __m512i BroadcastI32(const void* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return _mm512_set1_epi32(v);
}

// Rows of x for one tile: quants at xq + r * k, per-block integer corrections corr[r * nb + b],
// {d_x, s_x} at xds[2 * (r * nb + b)].
struct TileActs {
  const int8_t* xq;
  int64_t k, nb;
  const int32_t* corr;
  const float* xds;
};

// acc[r] += block b of x rows r < R against one packed block (weights w(kk), scales dw, mw).
// The one place where the panel numerics are written down (see the top of the file).
template <DType T, int R, class W>
HWY_INLINE void BlockMath(const W& w, __m512 dw, __m512 mw, const TileActs& x, int64_t b,
                          __m512 (&acc)[R]) {
  // With few rows the 8-deep vpdpbusd chain of a block is split in two (exact integers).
  constexpr int U = R <= 2 ? 2 : 1;
  __m512i ia[U][R];
  for (int r = 0; r < R; ++r) {
    ia[0][r] = _mm512_set1_epi32(x.corr[r * x.nb + b]);
    if constexpr (U == 2) ia[1][r] = _mm512_setzero_si512();
  }
#pragma GCC unroll 8
  for (int kk = 0; kk < 8; ++kk) {
    const __m512i wv = w(kk);
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      const __m512i xv = BroadcastI32(x.xq + r * x.k + b * kQBlock + 4 * kk);
      ia[kk % U][r] = _mm512_dpbusd_epi32(ia[kk % U][r], wv, xv);
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
    __m512i isum = ia[0][r];
    if constexpr (U == 2) isum = _mm512_add_epi32(isum, ia[1][r]);
    const float* ds = x.xds + 2 * (r * x.nb + b);
    const __m512 scale = _mm512_mul_ps(dw, _mm512_set1_ps(ds[0]));
    acc[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum), scale, acc[r]);
    if constexpr (T == DType::kQ4_1) acc[r] = _mm512_fmadd_ps(mw, _mm512_set1_ps(ds[1]), acc[r]);
  }
}

template <int R>
HWY_INLINE void StoreTile(const __m512 (&acc)[R], float* y, int64_t y_stride, __mmask16 cols) {
  for (int r = 0; r < R; ++r) _mm512_mask_storeu_ps(y + r * y_stride, cols, acc[r]);
}

// Packs a whole panel (16 rows at w, stride rb) into `panel` (the panel layout).
template <DType T>
HWY_INLINE void PackPanel(const uint8_t* w, int64_t rb, int64_t nb, const __m512i gather_idx,
                          uint8_t* panel) {
  ForEachPanelBlock<T>(panel, nb, [&](int64_t b, uint8_t* q, uint8_t* s) {
    RawBlock<T> raw;
    LoadRawBlock<T>(w + b * kBlockBytes<T>, rb, gather_idx, raw);
    for (int i = 0; i < kPanelQVecs<T>; ++i) _mm512_storeu_si512(q + 64 * i, raw.q[i]);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(s), raw.d);
    if constexpr (T == DType::kQ4_1) _mm256_storeu_si256(reinterpret_cast<__m256i*>(s + 32), raw.m);
  });
}

HWY_INLINE __m512 HalfsToFloats(const uint8_t* p) {
  return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
}

// R rows of x against S panels at once, panel + j * delta for j < S (same K), in the panel
// layout (packed at load or per call). S > 1: S weight streams in flight on one core (decode on
// Intel cores, where S streams read more than one: docs/benchmarks.md, "Four streams per
// worker"). Outputs at y + j * y_delta; every panel has 16 columns but the last (cols_last
// masks it).
// prefetch > 0 (decode from memory): prefetches each panel's byte stream that far ahead, into
// L2 (to_l2) or L1.
template <DType T, int R, int S>
HWY_INLINE void PanelStreamsTile(const uint8_t* panel, int64_t delta, const TileActs& x, float* y,
                                 int64_t y_delta, int64_t y_stride, __mmask16 cols_last,
                                 int64_t prefetch, bool to_l2) {
  constexpr int64_t kStep = kPanelQuantBytes<T> + kPanelScaleBytes<T>;
  __m512 acc[S][R];
  for (int j = 0; j < S; ++j)
    for (int r = 0; r < R; ++r) acc[j][r] = _mm512_setzero_ps();
  ForEachPanelBlock<T>(panel, x.nb, [&](int64_t b, const uint8_t* qb, const uint8_t* sb) {
    if (prefetch > 0) {
      // Each stream advances kStep bytes per block (runs are whole blocks).
      for (int j = 0; j < S; ++j)
        PrefetchPanelBytes(panel + j * delta + b * kStep + prefetch, kStep, to_l2);
    }
#pragma GCC unroll 4
    for (int j = 0; j < S; ++j) {
      const uint8_t* q = qb + j * delta;
      const uint8_t* sc = sb + j * delta;
      const auto qv = [q](int i) { return _mm512_loadu_si512(q + 64 * i); };
      const auto w = [&qv](int kk) { return QuantVector<T>(qv, kk); };
      const __m512 mw = T == DType::kQ4_1 ? HalfsToFloats(sc + 32) : _mm512_setzero_ps();
      BlockMath<T, R>(w, HalfsToFloats(sc), mw, x, b, acc[j]);
    }
  });
  for (int j = 0; j < S; ++j)
    StoreTile<R>(acc[j], y + j * y_delta, y_stride, j == S - 1 ? cols_last : __mmask16(0xFFFF));
}

// R rows of x against one panel; cols masks the output columns of the panel.
template <DType T, int R>
HWY_INLINE void PanelTile(const uint8_t* panel, const TileActs& x, float* y, int64_t y_stride,
                          __mmask16 cols, int64_t prefetch = 0, bool to_l2 = false) {
  PanelStreamsTile<T, R, 1>(panel, 0, x, y, 0, y_stride, cols, prefetch, to_l2);
}

// R (few) rows of x against 16 weight rows straight from the stored weights, repacked in
// registers, no panel in memory (decode of weights not packed at load).
// prefetch_ahead > 0: prefetches the same blocks that many bytes further (the next panel).
template <DType T, int R>
HWY_INLINE void DirectTile(const uint8_t* w, int64_t rb, const __m512i gather_idx,
                           const TileActs& x, float* y, int64_t y_stride, __mmask16 cols,
                           int64_t prefetch_ahead) {
  __m512 acc[R];
  for (int r = 0; r < R; ++r) acc[r] = _mm512_setzero_ps();
  for (int64_t b = 0; b < x.nb; ++b) {
    const uint8_t* p = w + b * kBlockBytes<T>;
    if (prefetch_ahead > 0 && (b & 1) == 0) {
      const uint8_t* f = p + prefetch_ahead;
      for (int c = 0; c < kPanelRows; ++c) {
        _mm_prefetch(reinterpret_cast<const char*>(f + c * rb), _MM_HINT_T0);
      }
    }
    RawBlock<T> raw;
    LoadRawBlock<T>(p, rb, gather_idx, raw);
    const auto qv = [&raw](int i) { return raw.q[i]; };
    const auto wv = [&qv](int kk) { return QuantVector<T>(qv, kk); };
    const __m512 mw = T == DType::kQ4_1 ? _mm512_cvtph_ps(raw.m) : _mm512_setzero_ps();
    BlockMath<T, R>(wv, _mm512_cvtph_ps(raw.d), mw, x, b, acc);
  }
  StoreTile<R>(acc, y, y_stride, cols);
}

template <DType T, int R>
HWY_INLINE void PanelTiles(const uint8_t* panel, const TileActs& x, int64_t rows, float* y,
                           int64_t y_stride, __mmask16 cols) {
  int64_t r0 = 0;
  for (; r0 + R <= rows; r0 += R) {
    const TileActs xr{x.xq + r0 * x.k, x.k, x.nb, x.corr + r0 * x.nb, x.xds + 2 * r0 * x.nb};
    PanelTile<T, R>(panel, xr, y + r0 * y_stride, y_stride, cols);
  }
  if constexpr (R > 1) {
    if (r0 < rows) {
      const TileActs xr{x.xq + r0 * x.k, x.k, x.nb, x.corr + r0 * x.nb, x.xds + 2 * r0 * x.nb};
      PanelTiles<T, R / 2>(panel, xr, rows - r0, y + r0 * y_stride, y_stride, cols);
    }
  }
}

// Up to this many x rows run DirectTile (no panel): the repacking then costs no more than the
// stores and reloads of a panel would.
// (2048 x 2048 q8_0 / q4_0 / q4_1, one thread: M = 4 takes 25-30% less time direct than with
// a panel; at M = 8 the two are within the noise of the shared machine.)
inline constexpr int64_t kDirectMaxRows = 4;

// Runs tile(n, cols, mask) for each panel of [n0, n1) (cols < 16 only for the last one).
template <class F>
HWY_INLINE void ForEachPanel(int64_t n0, int64_t n1, const F& tile) {
  for (int64_t n = n0; n < n1; n += kPanelRows) {
    const int cols = static_cast<int>(std::min<int64_t>(kPanelRows, n1 - n));
    tile(n, cols, static_cast<__mmask16>((1u << cols) - 1));
  }
}

// x rows per pass over the panels (the activation quants of a pass stay in L2).
HWY_INLINE int64_t GemmPassRows(int64_t k) {
  return std::max<int64_t>(
      kGemmTileRows, kGemmActsBytes / std::max<int64_t>(1, k) / kGemmTileRows * kGemmTileRows);
}

// The AMX tiles' GEMM over the same panels (qgemm_amx-inl.h), from kAmxMinRows x rows on.
inline constexpr int64_t kAmxMinRows = 16;
template <DType T>
void AmxPackedGemmRows(const MatMulArgs& a, const TileActs& acts, int64_t n0, int64_t n1);

// Decode over panels [n0, n1) (n0 a multiple of 16) as S streams: the range's panels split into
// S equal runs walked side by side, then the panels left over one at a time (none for S = 1).
template <DType T, int R, int S>
HWY_INLINE void DecodePanelStreams(const MatMulArgs& a, const TileActs& acts, int64_t n0,
                                   int64_t n1, int64_t ahead) {
  const int64_t stride = PanelStride(static_cast<int64_t>(a.w->row_bytes));
  const int64_t panels = (n1 - n0 + kPanelRows - 1) / kPanelRows, per_stream = panels / S;
  const auto mask_of = [n1](int64_t n) {
    return static_cast<__mmask16>((1u << std::min<int64_t>(kPanelRows, n1 - n)) - 1);
  };
  const auto panel = [&](int64_t n) { return a.w->packed + n / kPanelRows * stride; };
  const int64_t n_out = a.w->rows, run_rows = per_stream * kPanelRows;
  for (int64_t n = n0; n < n0 + run_rows; n += kPanelRows) {
    PanelStreamsTile<T, R, S>(panel(n), per_stream * stride, acts, a.y + n, run_rows, n_out,
                              mask_of(n + (S - 1) * run_rows), ahead, a.prefetch_to_l2);
  }
  for (int64_t n = n0 + S * run_rows; n < n1; n += kPanelRows) {
    PanelTile<T, R>(panel(n), acts, a.y + n, n_out, mask_of(n), ahead, a.prefetch_to_l2);
  }
}

// y[:, n0:n1) from panels packed at load (a.w->packed; n0 a multiple of 16).
template <DType T>
void PackedGemmRows(const MatMulArgs& a, const TileActs& acts, int64_t n0, int64_t n1) {
  const int64_t m = a.m, n_out = a.w->rows, nb = acts.nb;
  const int64_t stride = PanelStride(static_cast<int64_t>(a.w->row_bytes));
  const auto panel = [&](int64_t n) { return a.w->packed + n / kPanelRows * stride; };
  if (m <= kDirectMaxRows) {
    // Decode: one pass over the weights, streamed from memory with prefetch.
    const int64_t ahead = a.prefetch ? kPanelPrefetchBytes : 0;
    WithFewRows(m, [&](auto r) {
      constexpr int R = decltype(r)::value;
      if (a.decode_streams == 4) return DecodePanelStreams<T, R, 4>(a, acts, n0, n1, ahead);
      if (a.decode_streams == 2) return DecodePanelStreams<T, R, 2>(a, acts, n0, n1, ahead);
      // One panel after the other: this worker's weights are one contiguous stream.
      DecodePanelStreams<T, R, 1>(a, acts, n0, n1, ahead);
    });
    return;
  }
  if (a.amx && m >= kAmxMinRows) {
    AmxPackedGemmRows<T>(a, acts, n0, n1);
    return;
  }
  const int64_t pass_rows = GemmPassRows(acts.k);
  for (int64_t p0 = 0; p0 < m; p0 += pass_rows) {
    const int64_t p1 = std::min(m, p0 + pass_rows);
    const TileActs xp{acts.xq + p0 * acts.k, acts.k, nb, acts.corr + p0 * nb,
                      acts.xds + 2 * p0 * nb};
    ForEachPanel(n0, n1, [&](int64_t n, int, __mmask16 mask) {
      PanelTiles<T, kGemmTileRows>(panel(n), xp, p1 - p0, a.y + p0 * n_out + n, n_out, mask);
    });
  }
}

HWY_INLINE __m512i RowGatherIndex(int64_t rb) {
  alignas(64) int32_t idx[kPanelRows];
  for (int c = 0; c < kPanelRows; ++c) idx[c] = static_cast<int32_t>(c * rb);
  return _mm512_load_si512(idx);
}

// y[:, n0:n1) for q8_0 / q4_0 / q4_1 weights (one worker's share of the output columns).
template <DType T>
void QGemmRows(const MatMulArgs& a, int64_t n0, int64_t n1) {
  const ActsView& x = a.acts;
  const int64_t nb = x.blocks(), m = a.m, n_out = a.w->rows;
  const int64_t rb = static_cast<int64_t>(a.w->row_bytes);
  // Per-thread scratch: a panel packed per call, a zero-padded copy of a last partial panel,
  // and the activations' integer block corrections.
  thread_local std::vector<uint8_t> panel_mem, tail_mem;
  thread_local std::vector<int32_t> corr_mem;
  // q8_0: sum((w + 128) q) - 128 sum q; q4_0: sum(n q) - 8 sum q; q4_1: no correction.
  if (corr_mem.size() < static_cast<size_t>(m * nb)) corr_mem.resize(m * nb);
  constexpr int32_t kBias = T == DType::kQ8_0 ? 128 : (T == DType::kQ4_0 ? 8 : 0);
  for (int64_t i = 0; i < m * nb; ++i) corr_mem[i] = -kBias * x.sums[i];
  const int32_t* corr = corr_mem.data();
  const TileActs acts{x.qs, x.k, nb, corr, x.ds};
  if (a.w->packed != nullptr && n0 % kPanelRows == 0) {
    PackedGemmRows<T>(a, acts, n0, n1);
    return;
  }
  const __m512i gather_idx = RowGatherIndex(rb);
  if (m <= kDirectMaxRows) {
    WithFewRows(m, [&](auto r) {
      ForEachPanel(n0, n1, [&](int64_t n, int cols, __mmask16 mask) {
        const int64_t ahead = a.prefetch && n + 2 * kPanelRows <= n1 ? kPanelRows * rb : 0;
        DirectTile<T, decltype(r)::value>(StoredPanelRows(*a.w, n, kPanelRows, cols, tail_mem), rb,
                                          gather_idx, acts, a.y + n, n_out, mask, ahead);
      });
    });
    return;
  }
  uint8_t* panel = AlignedScratch(panel_mem, static_cast<size_t>(PanelStride(rb)));
  const int64_t pass_rows = GemmPassRows(x.k);
  for (int64_t p0 = 0; p0 < m; p0 += pass_rows) {
    const int64_t p1 = std::min(m, p0 + pass_rows);
    const TileActs xp{acts.xq + p0 * x.k, x.k, nb, corr + p0 * nb, acts.xds + 2 * p0 * nb};
    ForEachPanel(n0, n1, [&](int64_t n, int cols, __mmask16 mask) {
      PackPanel<T>(StoredPanelRows(*a.w, n, kPanelRows, cols, tail_mem), rb, nb, gather_idx, panel);
      PanelTiles<T, kGemmTileRows>(panel, xp, p1 - p0, a.y + p0 * n_out + n, n_out, mask);
    });
  }
}

// Writes all of w's panels (ceil(rows / 16) of PanelStride(row_bytes) bytes) to dst, in the
// panel layout, rows past the last zero (they contribute 0 and are masked off anyway).
template <DType T>
void PackQuantMatrix(const Matrix& w, uint8_t* dst) {
  const int64_t rb = static_cast<int64_t>(w.row_bytes), stride = PanelStride(rb);
  const int64_t nb = w.cols / kQBlock;
  const __m512i gather_idx = RowGatherIndex(rb);
  std::vector<uint8_t> tail;
  ForEachPanel(0, w.rows, [&](int64_t n, int cols, __mmask16) {
    uint8_t* panel = dst + n / kPanelRows * stride;
    PackPanel<T>(StoredPanelRows(w, n, kPanelRows, cols, tail), rb, nb, gather_idx, panel);
    std::memset(panel + kPanelRows * rb, 0, static_cast<size_t>(stride - kPanelRows * rb));
  });
}

}  // namespace kiln::kernels::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();
