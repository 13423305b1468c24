// Per-target MatMul row loops: y[:, n0:n1] for a range of output rows (one worker's share).
// Re-included once per Highway target (toggle guard below).
#if defined(KILN_KERNELS_MATMUL_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef KILN_KERNELS_MATMUL_INL_H_
#undef KILN_KERNELS_MATMUL_INL_H_
#else
#define KILN_KERNELS_MATMUL_INL_H_
#endif

#include <algorithm>
#include <cstdint>

#include "hwy/highway.h"
#include "kernels/fdot-inl.h"
#include "kernels/matmul.h"
#include "kernels/qdot-inl.h"

// Targets whose q8_0 / q4_0 / q4_1 MatMul runs on panels packed at load (matmul.cc reads the
// flag too): 16-row VNNI panels on AVX3_DL, 8-row maddubs panels on AVX2. Both define
// PackedQuantBytes, PackQuantMatrix<T> and QGemmRows<T>.
#undef KILN_QUANT_PANELS
#if HWY_TARGET == HWY_AVX3_DL
#define KILN_QUANT_PANELS 1
#include "kernels/qgemm_vnni-inl.h"
// After the VNNI panels, whose layout and tiles it uses:
#include "kernels/qgemm_amx-inl.h"
#elif HWY_TARGET == HWY_AVX2
#define KILN_QUANT_PANELS 1
#include "kernels/qpanel_avx2-inl.h"
#else
#define KILN_QUANT_PANELS 0
#endif

// Targets with the packed float panels of fpanel-inl.h (matmul.cc reads the flag too).
#undef KILN_FLOAT_PANELS
#if HWY_TARGET == HWY_AVX2 || HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
#define KILN_FLOAT_PANELS 1
#include "kernels/fpanel-inl.h"
#if HWY_TARGET == HWY_AVX3_DL
// After the float panels, whose bf16 layout it reads, and the AMX tile configuration:
#include "kernels/fgemm_amx-inl.h"
#endif
#else
#define KILN_FLOAT_PANELS 0
#endif

HWY_BEFORE_NAMESPACE();
namespace kiln::kernels::HWY_NAMESPACE {

// Rows of x per tile: each weight row is read once per tile and reused for these rows.
inline constexpr int kTileRows = 4;
// Weight bytes per cache block: all x tiles sweep over this many weight bytes, which then stay
// in L2 instead of being streamed from memory once per tile (matters for m > kTileRows).
inline constexpr uint64_t kWeightBlockBytes = 256 * 1024;
// How far ahead of the quantized kernels' loads weights are prefetched (bytes).
inline constexpr int64_t kPrefetchBytes = 4096;

// Weight rows per float tile: 4 x rows x 4 weight rows = 16 accumulators need AVX-512's 32
// registers; 16-register targets use 2 weight rows.
#if HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
inline constexpr int kFloatTileCols = 4;
#else
inline constexpr int kFloatTileCols = 2;
#endif

// Tile<R, NR>(n, r0): y[r0 + r, n + j] for r < R, j < NR, from quantized activations.
// kCols: the NR used for all but the last rows of a range (1: one weight row per tile).
template <DType T>
struct QuantTiles {
  static constexpr int kCols = 1;
  const MatMulArgs& a;
  template <int R, int NR>
  HWY_INLINE void Tile(int64_t n, int64_t r0) const {
    static_assert(NR == 1);
    const int64_t n_out = a.w->rows;
    const uint8_t* w_row = a.w->data + n * a.w->row_bytes;
#if HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
    // The first x tile streams the weights from memory: prefetch ahead (kPrefetchBytes).
    const int64_t prefetch = a.prefetch && r0 == 0 ? kPrefetchBytes : 0;
    QDotTile<T, R>(w_row, a.acts.Row(r0), a.y + r0 * n_out + n, n_out, prefetch);
#else
    QDotTile<T, R>(w_row, a.acts.Row(r0), a.y + r0 * n_out + n, n_out);
#endif
  }
};

// The same from f32 activations, weights of element type WT (float, float16_t, bfloat16_t).
template <typename WT>
struct FloatTiles {
  static constexpr int kCols = kFloatTileCols;
  const MatMulArgs& a;
  template <int R, int NR>
  HWY_INLINE void Tile(int64_t n, int64_t r0) const {
    const int64_t n_out = a.w->rows, k = a.w->cols;
    const WT* w_row = reinterpret_cast<const WT*>(a.w->data + n * a.w->row_bytes);
    const int64_t w_stride = static_cast<int64_t>(a.w->row_bytes / sizeof(WT));
    FDotTileN<WT, R, NR>(w_row, w_stride, k, a.x + r0 * k, a.y + r0 * n_out + n, n_out,
                         a.prefetch && r0 == 0);
  }
};

template <int R, class Tiles>
HWY_INLINE void TileColumn(const Tiles& tiles, int64_t r0, int64_t n0, int64_t n1) {
  constexpr int kCols = Tiles::kCols;
  int64_t n = n0;
  for (; n + kCols <= n1; n += kCols) tiles.template Tile<R, kCols>(n, r0);
  for (; n < n1; ++n) tiles.template Tile<R, 1>(n, r0);
}

// Loops over weight-row blocks of [n0, n1) and, inside each, over all x tiles.
template <class Tiles>
void RunTiles(const Tiles& tiles, const MatMulArgs& a, int64_t n0, int64_t n1) {
  const int64_t block_rows = std::max<int64_t>(
      1, static_cast<int64_t>(kWeightBlockBytes / std::max<uint64_t>(1, a.w->row_bytes)));
  for (int64_t b0 = n0; b0 < n1; b0 += block_rows) {
    const int64_t b1 = std::min(n1, b0 + block_rows);
    int64_t r = 0;
    for (; r + kTileRows <= a.m; r += kTileRows) TileColumn<kTileRows>(tiles, r, b0, b1);
    switch (a.m - r) {
      case 3:
        TileColumn<3>(tiles, r, b0, b1);
        break;
      case 2:
        TileColumn<2>(tiles, r, b0, b1);
        break;
      case 1:
        TileColumn<1>(tiles, r, b0, b1);
        break;
      default:
        break;
    }
  }
}

// The caller (matmul.cc) has already rejected dtypes without a kernel.
inline void MatMulRowsImpl(const MatMulArgs& a, int64_t n0, int64_t n1) {
#if KILN_FLOAT_PANELS
  // Float weights packed at load (fpanel-inl.h).
  if (a.w->packed != nullptr &&
      WithFloatType(a.w->dtype, [&](auto wt) { FloatPanelRowsT<decltype(wt)>(a, n0, n1); })) {
    return;
  }
#endif
  switch (a.w->dtype) {
    case DType::kF32:
      RunTiles(FloatTiles<float>{a}, a, n0, n1);
      break;
    case DType::kF16:
      RunTiles(FloatTiles<hwy::float16_t>{a}, a, n0, n1);
      break;
    case DType::kBF16:
      RunTiles(FloatTiles<hwy::bfloat16_t>{a}, a, n0, n1);
      break;
#if KILN_QUANT_PANELS
    // Packed panels, every M (qgemm_vnni-inl.h, qpanel_avx2-inl.h), unless KILN_QGEMM=0 asks
    // for the row tiles below (measurement only).
    case DType::kQ8_0:
      a.qgemm ? QGemmRows<DType::kQ8_0>(a, n0, n1)
              : RunTiles(QuantTiles<DType::kQ8_0>{a}, a, n0, n1);
      break;
    case DType::kQ4_0:
      a.qgemm ? QGemmRows<DType::kQ4_0>(a, n0, n1)
              : RunTiles(QuantTiles<DType::kQ4_0>{a}, a, n0, n1);
      break;
    case DType::kQ4_1:
      a.qgemm ? QGemmRows<DType::kQ4_1>(a, n0, n1)
              : RunTiles(QuantTiles<DType::kQ4_1>{a}, a, n0, n1);
      break;
#else
    case DType::kQ8_0:
      RunTiles(QuantTiles<DType::kQ8_0>{a}, a, n0, n1);
      break;
    case DType::kQ4_0:
      RunTiles(QuantTiles<DType::kQ4_0>{a}, a, n0, n1);
      break;
    case DType::kQ4_1:
      RunTiles(QuantTiles<DType::kQ4_1>{a}, a, n0, n1);
      break;
#endif
    default:
      break;
  }
}

}  // namespace kiln::kernels::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // KILN_KERNELS_MATMUL_INL_H_
