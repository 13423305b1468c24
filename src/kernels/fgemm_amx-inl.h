// AMX (Advanced Matrix Extensions, bf16) MatMul over the bf16 panels of fpanel-inl.h, for every
// M (decode included), on CPUs with AMX-BF16 whose kernel grants the tile state (matmul.cc:
// AmxBf16Enabled), for K a multiple of 32. Included by matmul-inl.h in its AVX3_DL pass only,
// after fpanel-inl.h (whose FloatPanelRowsT calls AmxBf16PanelRows) and qgemm_amx-inl.h (whose
// tile configuration it shares).
//
// A bf16 panel (16 weight rows) is ceil(K / 2) steps of 64 bytes, step j lane c = the pair
// (w[c][2j], w[c][2j + 1]). 16 consecutive steps are exactly an AMX B tile [16, 64] (16 k pairs
// x 16 columns), and 16 pairs of an x row (MatMulArgs::x_bf16) one row of an A tile [rows, 64],
// so the tiles read panels and activations in place. Per tile of up to 16 x rows and panel:
//   C [rows, 16] f32 = sum over s = 0, 16, 32, ... of A_s . B_s    (tdpbf16ps)
// accumulated in the tile over all of K, then stored: no per-step epilogue.
// Numerics: bf16 products are exact in f32; how a tdpbf16ps adds its 32 products per element
// is the hardware's, fixed per (row, column) and independent of the tile's other rows, so a row
// gets the same bits for every M: which is why every M of such a matrix runs here (batch
// invariance), decode too (one A row per tile; decode is bound by the weight stream anyway).
// Against the vdpbf16ps panels and the scalar twin only the f32 rounding differs.
// No include guard: matmul-inl.h includes it once, in the AVX3_DL pass (whose target pragma in
// matmul.cc enables AMX; the compiler never emits AMX instructions by itself).

HWY_BEFORE_NAMESPACE();
namespace kiln::kernels::HWY_NAMESPACE {

// k pairs per tile step (one B tile, 64 bytes of each A row).
inline constexpr int64_t kAmxBf16Steps = kAmxBf16StepMultiple;
// How far ahead of its tile loads decode prefetches the panel: half a tile step. Farther is
// slower, and 4 or 8 KiB (the tile loads' own addresses modulo 4 KiB) slowest: 8192 x 2048 bf16
// from DRAM, two threads, 1001 us at 512 B, 1050 at 2 KiB, 1271 at 4 KiB, 1178 at 8 KiB, 1057
// for the vdpbf16ps panels (bench/ab_kernels.sh, minimum of 5; docs/benchmarks.md).
inline constexpr int64_t kAmxDecodePrefetchBytes = 512;

// Tiles: C 0, 1 (x rows 0-15 x panels p, p + 1), C 2, 3 (rows 16-31), A 4, 5 (rows 0-15,
// 16-31), B 6, 7 (panels p, p + 1). h0 / h1: x rows in each half (h1 = 0: tiles 2, 3, 5 unset).
HWY_INLINE void AmxBf16Configure(int h0, int h1) {
  AmxTileConfig c;
  const int rows[2] = {h0, h1};
  for (int t = 0; t < 2; ++t) {
    if (rows[t] == 0) continue;
    c.rows[2 * t] = c.rows[2 * t + 1] = static_cast<uint8_t>(rows[t]);
    c.colsb[2 * t] = c.colsb[2 * t + 1] = 64;
    c.rows[4 + t] = static_cast<uint8_t>(rows[t]), c.colsb[4 + t] = 64;
  }
  for (int t = 6; t < 8; ++t) c.rows[t] = kAmxBf16Steps, c.colsb[t] = 64;
  _tile_loadconfig(&c);
}

// C tiles of x rows x0 (and x1 unless null) against panel p0 (and p0 + panel_stride if pair),
// over `steps` k pairs (a multiple of kAmxBf16Steps); x rows x_stride bytes apart.
HWY_INLINE void AmxBf16Dots(const uint8_t* p0, int64_t panel_stride, bool pair, const uint8_t* x0,
                            const uint8_t* x1, int64_t x_stride, int64_t steps, int64_t prefetch) {
  const uint8_t* p1 = p0 + panel_stride;
  _tile_zero(0);
  _tile_zero(1);
  if (x1 != nullptr) {
    _tile_zero(2);
    _tile_zero(3);
  }
  constexpr int64_t kStepBytes = 64 * kAmxBf16Steps;
  for (int64_t s = 0; s < steps; s += kAmxBf16Steps) {
    const int64_t at = s * 64;
    if (prefetch > 0) {
      for (int64_t i = 0; i < kStepBytes; i += 64) {
        hwy::Prefetch(p0 + at + prefetch + i);
        if (pair) hwy::Prefetch(p1 + at + prefetch + i);
      }
    }
    _tile_loadd(6, p0 + at, 64);
    _tile_loadd(4, x0 + s * 4, x_stride);
    _tile_dpbf16ps(0, 4, 6);
    if (pair) {
      _tile_loadd(7, p1 + at, 64);
      _tile_dpbf16ps(1, 4, 7);
    }
    if (x1 != nullptr) {
      _tile_loadd(5, x1 + s * 4, x_stride);
      _tile_dpbf16ps(2, 5, 6);
      if (pair) _tile_dpbf16ps(3, 5, 7);
    }
  }
}

// tilestored of C tile `tile` (0-3; tile numbers are immediates, hence the switch).
HWY_INLINE void AmxBf16StoreTile(int tile, void* to, int64_t stride) {
  switch (tile) {
    case 0:
      _tile_stored(0, to, stride);
      break;
    case 1:
      _tile_stored(1, to, stride);
      break;
    case 2:
      _tile_stored(2, to, stride);
      break;
    default:
      _tile_stored(3, to, stride);
      break;
  }
}

// Stores C tile `tile` (rows x 16 f32, one panel) to the panel's columns [lo, hi) of y (y at the
// panel's first column, rows n_out apart).
HWY_INLINE void AmxBf16Store(int tile, float* y, int64_t n_out, int rows, int64_t lo, int64_t hi) {
  if (lo == 0 && hi == 16) {
    AmxBf16StoreTile(tile, y, n_out * static_cast<int64_t>(sizeof(float)));
    return;
  }
  alignas(64) float c[16][16];
  AmxBf16StoreTile(tile, c, 64);
  const __mmask16 cols = static_cast<__mmask16>(((1u << hi) - 1) & ~((1u << lo) - 1));
  for (int r = 0; r < rows; ++r) _mm512_mask_storeu_ps(y + r * n_out, cols, _mm512_load_ps(c[r]));
}

// y[:, n0:n1) (one worker's share of the output rows) for bf16 panels with steps k pairs.
inline void AmxBf16PanelRows(const MatMulArgs& a, int64_t panel_stride, int64_t steps, int64_t n0,
                             int64_t n1) {
  const int64_t m = a.m, n_out = a.w->rows;
  const int64_t x_stride = steps * 4;  // bytes of one x row's pairs
  const uint8_t* x = reinterpret_cast<const uint8_t*>(a.x_bf16);
  // x rows per pass: their pairs stay in L2 while the pass sweeps this worker's panels.
  const int64_t pass_rows = std::max<int64_t>(32, kFloatPassBytes / x_stride / 32 * 32);
  // One tile of x rows (decode, small batches) is bound by the weight stream: one panel at a
  // time, prefetched kAmxDecodePrefetchBytes ahead. More rows: panel pairs share each A tile,
  // and the first tile of rows of a pass prefetches.
  const bool one_tile = m <= 16;
  const int64_t distance = one_tile ? kAmxDecodePrefetchBytes : kFloatPrefetchBytes;
  const int64_t ahead = (m == 1 ? a.float_decode_prefetch : a.prefetch) ? distance : 0;
  int config[2] = {-1, -1};
  for (int64_t p0 = 0; p0 < m; p0 += pass_rows) {
    const int64_t p1 = std::min(m, p0 + pass_rows);
    for (int64_t n = n0 / 16 * 16; n < n1; n += one_tile ? 16 : 32) {
      const bool pair = !one_tile && n + 16 < n1;
      const uint8_t* panel = a.w->packed + n / 16 * panel_stride;
      const int64_t lo = std::max<int64_t>(0, n0 - n), hi = std::min<int64_t>(16, n1 - n);
      const int64_t hi1 = pair ? std::min<int64_t>(16, n1 - n - 16) : 0;
      for (int64_t r = p0; r < p1; r += 32) {
        const int h0 = static_cast<int>(std::min<int64_t>(16, p1 - r));
        const int h1 = static_cast<int>(std::clamp<int64_t>(p1 - r - 16, 0, 16));
        if (h0 != config[0] || h1 != config[1]) {
          AmxBf16Configure(h0, h1);
          config[0] = h0, config[1] = h1;
        }
        const uint8_t* x0 = x + r * x_stride;
        AmxBf16Dots(panel, panel_stride, pair, x0, h1 > 0 ? x0 + 16 * x_stride : nullptr, x_stride,
                    steps, r == p0 ? ahead : 0);
        float* y = a.y + r * n_out + n;
        AmxBf16Store(0, y, n_out, h0, lo, hi);
        if (pair) AmxBf16Store(1, y + 16, n_out, h0, 0, hi1);
        if (h1 > 0) {
          AmxBf16Store(2, y + 16 * n_out, n_out, h1, lo, hi);
          if (pair) AmxBf16Store(3, y + 16 * n_out + 16, n_out, h1, 0, hi1);
        }
      }
    }
  }
  _tile_release();
}

}  // namespace kiln::kernels::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();
