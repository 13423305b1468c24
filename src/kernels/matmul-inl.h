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

HWY_BEFORE_NAMESPACE();
namespace kiln::kernels::HWY_NAMESPACE {

// Rows of x per tile: each weight row is read once per tile and reused for these rows.
inline constexpr int kTileRows = 4;
// Weight bytes per cache block: all x tiles sweep over this many weight bytes, which then stay
// in L2 instead of being streamed from memory once per tile (matters for m > kTileRows).
inline constexpr uint64_t kWeightBlockBytes = 256 * 1024;

// Tile<R>(n, r0): y[r0 + r, n] for r < R, from quantized activations.
template <DType T>
struct QuantTiles {
  const MatMulArgs& a;
  template <int R>
  HWY_INLINE void Tile(int64_t n, int64_t r0) const {
    const int64_t n_out = a.w->rows;
    QDotTile<T, R>(a.w->data + n * a.w->row_bytes, a.acts.Row(r0), a.y + r0 * n_out + n, n_out);
  }
};

// Tile<R>(n, r0) from f32 activations, weights of element type WT (float, float16_t, bfloat16_t).
template <typename WT>
struct FloatTiles {
  const MatMulArgs& a;
  template <int R>
  HWY_INLINE void Tile(int64_t n, int64_t r0) const {
    const int64_t n_out = a.w->rows, k = a.w->cols;
    const WT* w_row = reinterpret_cast<const WT*>(a.w->data + n * a.w->row_bytes);
    FDotTile<WT, R>(w_row, k, a.x + r0 * k, a.y + r0 * n_out + n, n_out);
  }
};

template <int R, class Tiles>
HWY_INLINE void TileColumn(const Tiles& tiles, int64_t r0, int64_t n0, int64_t n1) {
  for (int64_t n = n0; n < n1; ++n) tiles.template Tile<R>(n, r0);
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
    case DType::kQ8_0:
      RunTiles(QuantTiles<DType::kQ8_0>{a}, a, n0, n1);
      break;
    case DType::kQ4_0:
      RunTiles(QuantTiles<DType::kQ4_0>{a}, a, n0, n1);
      break;
    case DType::kQ4_1:
      RunTiles(QuantTiles<DType::kQ4_1>{a}, a, n0, n1);
      break;
    default:
      break;
  }
}

}  // namespace kiln::kernels::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // KILN_KERNELS_MATMUL_INL_H_
