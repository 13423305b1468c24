// AMX (Advanced Matrix Extensions, int8) GEMM over the q8_0 / q4_0 / q4_1 panels of
// qgemm_vnni-inl.h, for 16 or more x rows (prefill, batched decode) on CPUs with AMX-INT8 whose
// kernel grants the tile state (matmul.cc: AmxEnabled). Included by matmul-inl.h in its AVX3_DL
// pass only, after qgemm_vnni-inl.h (whose PackedGemmRows calls AmxPackedGemmRows).
//
// Per panel (16 weight rows) the quant groups are unpacked once per pass into one B tile per
// block: B_b [8, 64] int8, row kk = the panel's weight vector kk (lane c = weights 4kk..4kk+3 of
// row c) as exact signed weights (q8_0: w, q4_0: n - 8, q4_1: n), with the block's scales
// widened to f32 beside it. Then for each 16 x rows and block b
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
// kAmxMinRows (qgemm_vnni-inl.h): 16, one tile of rows. At 16 rows the tiles and the VNNI
// register tiles are close in isolation (one thread, 2048 x 2048, q8_0 / q4_0 / q4_1: 366 / 310
// / 370 us against 353 / 341 / 343; kernels_bench MatMul/batch), and batched decode of 16
// sequences gains in the model (model_bench --batch 16, two threads: Qwen2.5-0.5B q8_0 310-314
// -> 341-346 tok/s, Llama-3.2-1B q8_0 139 -> 148-149, q4_0 194-198 -> 204-209); from 64 rows on
// the tiles take 0.65-0.75x the time.
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

// Unpacks a panel's nb blocks into out [nb, kAmxBlockBytes] (64-byte aligned).
template <DType T>
HWY_INLINE void UnpackPanelForAmx(const uint8_t* panel, int64_t nb, uint8_t* out, int64_t prefetch,
                                  bool to_l2) {
  constexpr int64_t kStep = kPanelQuantBytes<T> + kPanelScaleBytes<T>;
  ForEachPanelBlock<T>(panel, nb, [&](int64_t b, const uint8_t* qb, const uint8_t* sb) {
    if (prefetch > 0) {
      for (int64_t i = 0; i < kStep; i += 64) {
        const char* line = reinterpret_cast<const char*>(panel + b * kStep + prefetch + i);
        if (to_l2) {
          _mm_prefetch(line, _MM_HINT_T1);
        } else {
          _mm_prefetch(line, _MM_HINT_T0);
        }
      }
    }
    uint8_t* o = out + b * kAmxBlockBytes;
    const auto qv = [qb](int i) { return _mm512_loadu_si512(qb + 64 * i); };
    for (int kk = 0; kk < 8; ++kk) {
      __m512i v = QuantVector<T>(qv, kk);
      if constexpr (T == DType::kQ8_0) {
        v = _mm512_xor_si512(v, _mm512_set1_epi8(static_cast<char>(0x80)));  // w + 128 -> w
      } else if constexpr (T == DType::kQ4_0) {
        v = _mm512_sub_epi8(v, _mm512_set1_epi8(8));
      }
      _mm512_store_si512(o + 64 * kk, v);
    }
    _mm512_store_ps(reinterpret_cast<float*>(o + 512), HalfsToFloats(sb));
    if constexpr (T == DType::kQ4_1) {
      _mm512_store_ps(reinterpret_cast<float*>(o + 576), HalfsToFloats(sb + 32));
    }
  });
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

// Integer dots of blocks b and b + 1 (b + 1 < nb only if pair) for 16 x rows into c[0], c[1].
// Tile numbers are immediates, so the pair is spelled out.
HWY_INLINE void AmxBlockDots(const uint8_t* unpacked, const TileActs& x, int64_t b, bool pair,
                             int32_t (*c)[kAmxRows][16]) {
  const uint8_t* blk = unpacked + b * kAmxBlockBytes;
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

// 16 x rows against one unpacked panel: y [16, cols] (row stride y_stride). Software-pipelined:
// the tiles compute blocks b + 2, b + 3 while the vector units scale blocks b, b + 1.
template <DType T>
HWY_INLINE void AmxPanelRows(const uint8_t* unpacked, const TileActs& x, float* y, int64_t y_stride,
                             __mmask16 cols) {
  alignas(64) int32_t c[2][2][kAmxRows][16];
  __m512 acc[kAmxRows];
  for (int r = 0; r < kAmxRows; ++r) acc[r] = _mm512_setzero_ps();
  const int64_t nb = x.nb;
  AmxBlockDots(unpacked, x, 0, nb > 1, c[0]);
  for (int64_t b = 0, i = 0; b < nb; b += 2, i ^= 1) {
    if (b + 2 < nb) AmxBlockDots(unpacked, x, b + 2, b + 3 < nb, c[i ^ 1]);
    AmxEpilogue<T>(c[i][0], unpacked + b * kAmxBlockBytes, x, b, acc);
    if (b + 1 < nb) AmxEpilogue<T>(c[i][1], unpacked + (b + 1) * kAmxBlockBytes, x, b + 1, acc);
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
  AmxConfigure();
  for (int64_t p0 = 0; p0 < full; p0 += pass_rows) {
    const int64_t p1 = std::min(full, p0 + pass_rows);
    ForEachPanel(n0, n1, [&](int64_t n, int, __mmask16 mask) {
      UnpackPanelForAmx<T>(a.w->packed + n / kPanelRows * stride, nb, unpacked, ahead,
                           a.prefetch_to_l2);
      for (int64_t r0 = p0; r0 < p1; r0 += kAmxRows) {
        AmxPanelRows<T>(unpacked, rows_from(r0), a.y + r0 * n_out + n, n_out, mask);
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
