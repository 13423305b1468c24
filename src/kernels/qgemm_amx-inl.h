// AMX (Advanced Matrix Extensions, int8) GEMM over the q8_0 / q4_0 / q4_1 panels of
// qgemm_vnni-inl.h, for 16 or more x rows (prefill, batched decode) on CPUs with AMX-INT8 whose
// kernel grants the tile state (matmul.cc: AmxEnabled). Included by matmul-inl.h in its AVX3_DL
// pass only, after qgemm_vnni-inl.h (whose PackedGemmRows calls AmxPackedGemmRows).
//
// Per panel (16 weight rows) the quant groups are unpacked into one B tile per block (once per
// pass over several tiles of x rows; with one tile of rows, block pair by block pair into a ring
// that stays in L1): B_b [8, 64] int8, row kk = the panel's weight vector kk (lane c = weights
// 4kk..4kk+3 of row c) as exact signed weights (q8_0: w, q4_0: n - 8, q4_1: n), with the block's
// scales widened to f32 beside it. Then for each 16 x rows and block b
//   C [16, 16] int32 = A_b [16, 32] int8 (the rows' block-b activation quants, read in place)
//                      . B_b                                              (tdpbssd)
// is exactly the integer block dot I_b of qgemm_vnni-inl.h (its correction -bias * sum q is the
// same integer, folded here into the signed weights), and the f32 epilogue is BlockMath's:
//   acc = fma(f32(I_b), d_w * d_x, acc)   (q4_1: then acc = fma(m_w, s_x, acc))
// in block order. So every row gets the bits the VNNI tiles give it: batch invariance holds
// across M, and the M % 16 rows left over run on the VNNI tiles.
// Why: one tdpbssd does 16 x 16 x 32 multiply-adds, which take the VNNI tiles 128 vpdpbusd;
// what is left per block is the epilogue's 4 vector ops per x row.
// No include guard: matmul-inl.h includes it once, in the AVX3_DL pass (whose target pragma in
// matmul.cc enables AMX; the compiler never emits AMX instructions by itself).

HWY_BEFORE_NAMESPACE();
namespace kiln::kernels::HWY_NAMESPACE {

// x rows per A tile.
inline constexpr int kAmxRows = 16;
// kAmxMinRows (qgemm_vnni-inl.h): 16, one tile of rows. At 16 rows the tiles with the L1 ring
// beat the VNNI register tiles in isolation (one thread, 2048 x 2048, q8_0 / q4_0: 283-289 /
// 275-285 us against 340 / 299; kernels_bench MatMul/batch; unpacking the whole panel first took
// 363-391 / 310-317, its 40 KB falling out of L1 beside the rows' 32 KB), and batched decode of
// 16 sequences gains more in the model (model_bench --batch 16, two threads, against the VNNI
// tiles: Qwen2.5-0.5B q8_0 310-314 -> 444-446 tok/s, Llama-3.2-1B q8_0 139 -> 206-213, q4_0
// 194-198 -> 264-284); from 64 rows on the tiles take 0.65-0.75x the time.
// Bytes of one unpacked block: the B tile (8 x 64), 16 f32 d_w, 16 f32 m_w (q4_1).
inline constexpr int64_t kAmxBlockBytes = 512 + 64 + 64;

// The tile configuration (palette 1): C tiles 0, 1 [16 x 64 bytes], A tiles 2, 3 [16 x 32],
// B tiles 4, 5 [8 x 64]: two blocks in flight.
struct alignas(64) AmxTileConfig {
  uint8_t palette = 1;
  uint8_t start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t colsb[16] = {};
  uint8_t rows[16] = {};
};

HWY_INLINE void AmxConfigure() {
  AmxTileConfig c;
  for (int t = 0; t < 2; ++t) {
    c.rows[t] = kAmxRows, c.colsb[t] = 64;          // C
    c.rows[2 + t] = kAmxRows, c.colsb[2 + t] = 32;  // A
    c.rows[4 + t] = 8, c.colsb[4 + t] = 64;         // B
  }
  _tile_loadconfig(&c);
}

// Unpacks one block (quant group qb, scale group sb) into out [kAmxBlockBytes] (64-aligned).
template <DType T>
HWY_INLINE void UnpackBlockForAmx(const uint8_t* qb, const uint8_t* sb, uint8_t* out) {
  const auto qv = [qb](int i) { return _mm512_loadu_si512(qb + 64 * i); };
  for (int kk = 0; kk < 8; ++kk) {
    __m512i v = QuantVector<T>(qv, kk);
    if constexpr (T == DType::kQ8_0) {
      v = _mm512_xor_si512(v, _mm512_set1_epi8(static_cast<char>(0x80)));  // w + 128 -> w
    } else if constexpr (T == DType::kQ4_0) {
      v = _mm512_sub_epi8(v, _mm512_set1_epi8(8));
    }
    _mm512_store_si512(out + 64 * kk, v);
  }
  _mm512_store_ps(reinterpret_cast<float*>(out + 512), HalfsToFloats(sb));
  if constexpr (T == DType::kQ4_1) {
    _mm512_store_ps(reinterpret_cast<float*>(out + 576), HalfsToFloats(sb + 32));
  }
}

// Unpacks a panel's nb blocks into out [nb, kAmxBlockBytes], prefetching `prefetch` bytes ahead.
template <DType T>
HWY_INLINE void UnpackPanelForAmx(const uint8_t* panel, int64_t nb, uint8_t* out, int64_t prefetch,
                                  bool to_l2) {
  constexpr int64_t kStep = kPanelQuantBytes<T> + kPanelScaleBytes<T>;
  ForEachPanelBlock<T>(panel, nb, [&](int64_t b, const uint8_t* qb, const uint8_t* sb) {
    if (prefetch > 0) PrefetchPanelBytes(panel + b * kStep + prefetch, kStep, to_l2);
    UnpackBlockForAmx<T>(qb, sb, out + b * kAmxBlockBytes);
  });
}

// Block b's quant and scale groups in a panel of nb blocks (the run layout of
// ForEachPanelBlock, addressed at random).
template <DType T>
HWY_INLINE void PanelBlockAt(const uint8_t* panel, int64_t nb, int64_t b, const uint8_t*& qb,
                             const uint8_t*& sb) {
  constexpr int64_t kRun = kPanelRunBlocks<T>;
  constexpr int64_t kQ = kPanelQuantBytes<T>, kS = kPanelScaleBytes<T>;
  const int64_t first = b / kRun * kRun, in_run = std::min(kRun, nb - first);
  const uint8_t* run = panel + first * (kQ + kS);
  qb = run + (b - first) * kQ;
  sb = run + in_run * kQ + (b - first) * kS;
}

// acc[r] += block b's scaled integer dots c [16, 16] for the 16 rows (BlockMath's epilogue).
template <DType T>
HWY_INLINE void AmxEpilogue(const int32_t (*c)[16], const uint8_t* blk, const TileActs& x,
                            int64_t b, __m512 (&acc)[kAmxRows]) {
  const __m512 dw = _mm512_load_ps(reinterpret_cast<const float*>(blk + 512));
  const __m512 mw = T == DType::kQ4_1 ? _mm512_load_ps(reinterpret_cast<const float*>(blk + 576))
                                      : _mm512_setzero_ps();
#pragma GCC unroll 16
  for (int r = 0; r < kAmxRows; ++r) {
    const float* ds = x.xds + 2 * (r * x.nb + b);
    const __m512 scale = _mm512_mul_ps(dw, _mm512_set1_ps(ds[0]));
    acc[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_load_si512(c[r])), scale, acc[r]);
    if constexpr (T == DType::kQ4_1) acc[r] = _mm512_fmadd_ps(mw, _mm512_set1_ps(ds[1]), acc[r]);
  }
}

// Integer dots of blocks b and b + 1 (b + 1 < nb only if pair; unpacked at blk, blk +
// kAmxBlockBytes) for 16 x rows into c[0], c[1].
// Tile numbers are immediates, so the pair is spelled out.
HWY_INLINE void AmxBlockDots(const uint8_t* blk, const TileActs& x, int64_t b, bool pair,
                             int32_t (*c)[kAmxRows][16]) {
  _tile_zero(0);
  _tile_loadd(2, x.xq + b * kQBlock, x.k);
  _tile_loadd(4, blk, 64);
  _tile_dpbssd(0, 2, 4);
  if (pair) {
    _tile_zero(1);
    _tile_loadd(3, x.xq + (b + 1) * kQBlock, x.k);
    _tile_loadd(5, blk + kAmxBlockBytes, 64);
    _tile_dpbssd(1, 3, 5);
  }
  _tile_stored(0, c[0], 64);
  if (pair) _tile_stored(1, c[1], 64);
}

// 16 x rows against one panel: y [16, cols] (row stride y_stride). block(b) returns unpacked
// blocks b, b + 1 (b even), readable until block(b + 4) is asked for. Software-pipelined: the
// tiles compute blocks b + 2, b + 3 while the vector units scale blocks b, b + 1.
template <DType T, class Blocks>
HWY_INLINE void AmxPanelRows(const Blocks& block, const TileActs& x, float* y, int64_t y_stride,
                             __mmask16 cols) {
  alignas(64) int32_t c[2][2][kAmxRows][16];
  __m512 acc[kAmxRows];
  for (int r = 0; r < kAmxRows; ++r) acc[r] = _mm512_setzero_ps();
  const int64_t nb = x.nb;
  const uint8_t* blk = block(0);
  AmxBlockDots(blk, x, 0, nb > 1, c[0]);
  for (int64_t b = 0, i = 0; b < nb; b += 2, i ^= 1) {
    const uint8_t* next = b + 2 < nb ? block(b + 2) : nullptr;
    if (next != nullptr) AmxBlockDots(next, x, b + 2, b + 3 < nb, c[i ^ 1]);
    AmxEpilogue<T>(c[i][0], blk, x, b, acc);
    if (b + 1 < nb) AmxEpilogue<T>(c[i][1], blk + kAmxBlockBytes, x, b + 1, acc);
    blk = next;
  }
  StoreTile<kAmxRows>(acc, y, y_stride, cols);
}

// y[:, n0:n1) from panels packed at load, for m >= kAmxMinRows (n0 a multiple of 16): whole
// groups of 16 x rows on the tiles, the rest on the VNNI register tiles.
template <DType T>
void AmxPackedGemmRows(const MatMulArgs& a, const TileActs& acts, int64_t n0, int64_t n1) {
  const int64_t m = a.m, n_out = a.w->rows, nb = acts.nb;
  const int64_t stride = PanelStride(static_cast<int64_t>(a.w->row_bytes));
  thread_local std::vector<uint8_t> unpack_mem;
  uint8_t* unpacked = AlignedScratch(unpack_mem, static_cast<size_t>(nb * kAmxBlockBytes));
  const int64_t full = m / kAmxRows * kAmxRows;
  const int64_t pass_rows = std::max<int64_t>(kAmxRows, GemmPassRows(acts.k) / kAmxRows * kAmxRows);
  const auto rows_from = [&](int64_t r0) {
    return TileActs{acts.xq + r0 * acts.k, acts.k, nb, acts.corr + r0 * nb, acts.xds + 2 * r0 * nb};
  };
  // The first pass streams the panels from memory: prefetch them as the decode tiles do.
  const int64_t ahead = a.prefetch ? kPanelPrefetchBytes : 0;
  constexpr int64_t kStep = kPanelQuantBytes<T> + kPanelScaleBytes<T>;
  AmxConfigure();
  for (int64_t p0 = 0; p0 < full; p0 += pass_rows) {
    const int64_t p1 = std::min(full, p0 + pass_rows);
    ForEachPanel(n0, n1, [&](int64_t n, int, __mmask16 mask) {
      const uint8_t* panel = a.w->packed + n / kPanelRows * stride;
      if (p1 - p0 == kAmxRows) {
        // One tile of rows: unpack each pair of blocks just before its tiles, into a ring of
        // four blocks that stays in L1 (a whole unpacked panel would not, beside the rows).
        const auto block = [&](int64_t b) {
          uint8_t* slot = unpacked + (b & 3) * kAmxBlockBytes;
          for (int64_t j = b; j < std::min(nb, b + 2); ++j) {
            const uint8_t *qb, *sb;
            PanelBlockAt<T>(panel, nb, j, qb, sb);
            if (ahead > 0) PrefetchPanelBytes(panel + j * kStep + ahead, kStep, a.prefetch_to_l2);
            UnpackBlockForAmx<T>(qb, sb, slot + (j - b) * kAmxBlockBytes);
          }
          return static_cast<const uint8_t*>(slot);
        };
        AmxPanelRows<T>(block, rows_from(p0), a.y + p0 * n_out + n, n_out, mask);
        return;
      }
      UnpackPanelForAmx<T>(panel, nb, unpacked, ahead, a.prefetch_to_l2);
      const auto block = [&](int64_t b) {
        return static_cast<const uint8_t*>(unpacked + b * kAmxBlockBytes);
      };
      for (int64_t r0 = p0; r0 < p1; r0 += kAmxRows) {
        AmxPanelRows<T>(block, rows_from(r0), a.y + r0 * n_out + n, n_out, mask);
      }
    });
  }
  _tile_release();
  if (full == m) return;
  ForEachPanel(n0, n1, [&](int64_t n, int, __mmask16 mask) {
    PanelTiles<T, kGemmTileRows>(a.w->packed + n / kPanelRows * stride, rows_from(full), m - full,
                                 a.y + full * n_out + n, n_out, mask);
  });
}

}  // namespace kiln::kernels::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();
