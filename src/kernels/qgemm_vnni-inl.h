// AVX3_DL (AVX-512 VNNI) GEMM for q8_0 / q4_0 / q4_1 weights against int8 activations
// (included by matmul-inl.h in its AVX3_DL pass only; other targets keep qdot-inl.h's tiles).
//
// Layout. A panel is 16 consecutive weight rows (output columns), repacked per 32-element block
// b into 8 vectors of 64 bytes: vector kk, lane c = weight quants 4kk..4kk+3 of row c, as
// unsigned bytes (q8_0: w + 128; q4_0 / q4_1: the nibble), then the 16 rows' d_w (and q4_1's m_w)
// widened to f32. One vpdpbusd of a weight vector with activation quants 4kk..4kk+3 of row r
// broadcast to all lanes (signed) advances 16 dots at once, and after the block's 8 vectors each
// lane holds the exact integer block dot of its column; the activation side needs no shuffles.
// The repacking (a 16 x 8 dword transpose) is paid once per panel block and reused by every x
// row: M > kDirectMaxRows stores the repacked panel in a per-thread buffer and runs 8-row register
// tiles over it; M <= kDirectMaxRows (decode) uses the repacked registers directly (DirectTile).
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
// Bytes of one packed block of a panel: 8 weight vectors, d_w (and m_w).
template <DType T>
inline constexpr int kPanelBlockBytes = 8 * 64 + 64 + (T == DType::kQ4_1 ? 64 : 0);
// x rows per register tile (8 f32 + 8 int32 accumulators).
inline constexpr int kGemmTileRows = 8;
// x rows per pass over the panels: keeps a pass's activation quants (rows x K bytes) in L2.
inline constexpr int64_t kGemmActsBytes = 512 * 1024;

// Block b of a panel's 16 rows, repacked in registers (see the layout above).
struct PackedBlock {
  __m512i v[8];  // k-vectors: lane c = quants 4kk..4kk+3 of row c, unsigned
  __m512 dw;     // d_w of the 16 rows
  __m512 mw;     // m_w (q4_1 only)
};

// Repacks the blocks at p, p + rb, ..., p + 15 rb (16 rows' block b; p points at row 0's block).
template <DType T>
HWY_INLINE void LoadBlock(const uint8_t* p, int64_t rb, const __m512i gather_idx,
                          PackedBlock& out) {
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
      out.v[d] = _mm512_xor_si512(_mm512_shuffle_i32x4(u[d], u[4 + d], 0x88), bias);
      out.v[d + 4] = _mm512_xor_si512(_mm512_shuffle_i32x4(u[d], u[4 + d], 0xDD), bias);
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
    const __m512i t0 = _mm512_unpacklo_epi32(bq[0], bq[1]), t1 = _mm512_unpackhi_epi32(bq[0], bq[1]);
    const __m512i t2 = _mm512_unpacklo_epi32(bq[2], bq[3]), t3 = _mm512_unpackhi_epi32(bq[2], bq[3]);
    const __m512i tr[4] = {_mm512_unpacklo_epi64(t0, t2), _mm512_unpackhi_epi64(t0, t2),
                           _mm512_unpacklo_epi64(t1, t3), _mm512_unpackhi_epi64(t1, t3)};
    const __m512i nib = _mm512_set1_epi8(0x0F);
    for (int d = 0; d < 4; ++d) {
      out.v[d] = _mm512_and_si512(tr[d], nib);  // elements 4d..4d+3: low nibbles
      out.v[d + 4] = _mm512_and_si512(_mm512_srli_epi16(tr[d], 4), nib);  // 16 + 4d..: high
    }
  }
  // Scales: {d} or {d, m} as f16 at the start of each row's block.
  const __m512i bits = _mm512_i32gather_epi32(gather_idx, p, 1);
  out.dw = _mm512_cvtph_ps(_mm512_cvtepi32_epi16(bits));
  if constexpr (T == DType::kQ4_1) {
    out.mw = _mm512_cvtph_ps(_mm512_cvtepi32_epi16(_mm512_srli_epi32(bits, 16)));
  } else {
    out.mw = _mm512_setzero_ps();
  }
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

// Packs a whole panel (16 rows at w, stride rb) into `panel`.
template <DType T>
HWY_INLINE void PackPanel(const uint8_t* w, int64_t rb, int64_t nb, const __m512i gather_idx,
                          uint8_t* panel) {
  for (int64_t b = 0; b < nb; ++b) {
    PackedBlock pb;
    LoadBlock<T>(w + b * kBlockBytes<T>, rb, gather_idx, pb);
    uint8_t* out = panel + b * kPanelBlockBytes<T>;
    for (int kk = 0; kk < 8; ++kk) _mm512_store_si512(out + 64 * kk, pb.v[kk]);
    _mm512_store_ps(out + 512, pb.dw);
    if constexpr (T == DType::kQ4_1) _mm512_store_ps(out + 576, pb.mw);
  }
}

// R rows of x against a packed panel.
template <DType T, int R>
HWY_INLINE void PanelTile(const uint8_t* panel, const TileActs& x, float* y, int64_t y_stride,
                          __mmask16 cols) {
  __m512 acc[R];
  for (int r = 0; r < R; ++r) acc[r] = _mm512_setzero_ps();
  for (int64_t b = 0; b < x.nb; ++b) {
    const uint8_t* pb = panel + b * kPanelBlockBytes<T>;
    const auto w = [pb](int kk) { return _mm512_load_si512(pb + 64 * kk); };
    const __m512 dw = _mm512_load_ps(pb + 512);
    const __m512 mw = T == DType::kQ4_1 ? _mm512_load_ps(pb + 576) : _mm512_setzero_ps();
    BlockMath<T, R>(w, dw, mw, x, b, acc);
  }
  StoreTile<R>(acc, y, y_stride, cols);
}

// R (few) rows of x against 16 weight rows straight from the weights, no packed panel (decode).
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
    PackedBlock pb;
    LoadBlock<T>(p, rb, gather_idx, pb);
    const auto wv = [&pb](int kk) { return pb.v[kk]; };
    BlockMath<T, R>(wv, pb.dw, pb.mw, x, b, acc);
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

// y[:, n0:n1) for q8_0 / q4_0 / q4_1 weights (one worker's share of the output columns).
template <DType T>
void QGemmRows(const MatMulArgs& a, int64_t n0, int64_t n1) {
  const ActsView& x = a.acts;
  const int64_t nb = x.blocks(), m = a.m, n_out = a.w->rows;
  const int64_t rb = static_cast<int64_t>(a.w->row_bytes);
  // Per-thread scratch: the packed panel, a zero-padded copy of a last partial panel, and the
  // activations' integer block corrections.
  thread_local std::vector<uint8_t> panel_mem, tail_mem;
  thread_local std::vector<int32_t> corr_mem;
  const auto aligned = [](std::vector<uint8_t>& v, size_t bytes) {
    if (v.size() < bytes + 64) v.resize(bytes + 64);
    return reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(v.data()) + 63) &
                                      ~uintptr_t{63});
  };
  // q8_0: sum((w + 128) q) - 128 sum q; q4_0: sum(n q) - 8 sum q; q4_1: no correction.
  if (corr_mem.size() < static_cast<size_t>(m * nb)) corr_mem.resize(m * nb);
  constexpr int32_t kBias = T == DType::kQ8_0 ? 128 : (T == DType::kQ4_0 ? 8 : 0);
  for (int64_t i = 0; i < m * nb; ++i) corr_mem[i] = -kBias * x.sums[i];
  const int32_t* corr = corr_mem.data();
  const TileActs acts{x.qs, x.k, nb, corr, x.ds};
  alignas(64) int32_t idx[kPanelRows];
  for (int c = 0; c < kPanelRows; ++c) idx[c] = static_cast<int32_t>(c * rb);
  const __m512i gather_idx = _mm512_load_si512(idx);
  // The weights of panel n: a partial last panel is copied with its rows zero-padded to 16.
  const auto panel_rows = [&](int64_t n, int cols) -> const uint8_t* {
    const uint8_t* src = a.w->data + n * rb;
    if (cols == kPanelRows) return src;
    uint8_t* tail = aligned(tail_mem, static_cast<size_t>(kPanelRows * rb));
    std::memcpy(tail, src, static_cast<size_t>(cols * rb));
    std::memset(tail + cols * rb, 0, static_cast<size_t>((kPanelRows - cols) * rb));
    return tail;
  };
  if (m <= kDirectMaxRows) {
    for (int64_t n = n0; n < n1; n += kPanelRows) {
      const int cols = static_cast<int>(std::min<int64_t>(kPanelRows, n1 - n));
      const __mmask16 mask = static_cast<__mmask16>((1u << cols) - 1);
      const uint8_t* w = panel_rows(n, cols);
      const int64_t ahead = a.prefetch && n + 2 * kPanelRows <= n1 ? kPanelRows * rb : 0;
      float* y = a.y + n;
      switch (m) {
        case 4:
          DirectTile<T, 4>(w, rb, gather_idx, acts, y, n_out, mask, ahead);
          break;
        case 3:
          DirectTile<T, 3>(w, rb, gather_idx, acts, y, n_out, mask, ahead);
          break;
        case 2:
          DirectTile<T, 2>(w, rb, gather_idx, acts, y, n_out, mask, ahead);
          break;
        default:
          DirectTile<T, 1>(w, rb, gather_idx, acts, y, n_out, mask, ahead);
          break;
      }
    }
    return;
  }
  uint8_t* panel = aligned(panel_mem, static_cast<size_t>(nb) * kPanelBlockBytes<T>);
  const int64_t pass_rows = std::max<int64_t>(
      kGemmTileRows, kGemmActsBytes / std::max<int64_t>(1, x.k) / kGemmTileRows * kGemmTileRows);
  for (int64_t p0 = 0; p0 < m; p0 += pass_rows) {
    const int64_t p1 = std::min(m, p0 + pass_rows);
    const TileActs xp{acts.xq + p0 * x.k, x.k, nb, corr + p0 * nb,
                      acts.xds + 2 * p0 * nb};
    for (int64_t n = n0; n < n1; n += kPanelRows) {
      const int cols = static_cast<int>(std::min<int64_t>(kPanelRows, n1 - n));
      const __mmask16 mask = static_cast<__mmask16>((1u << cols) - 1);
      PackPanel<T>(panel_rows(n, cols), rb, nb, gather_idx, panel);
      PanelTiles<T, kGemmTileRows>(panel, xp, p1 - p0, a.y + p0 * n_out + n, n_out, mask);
    }
  }
}

}  // namespace kiln::kernels::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();
