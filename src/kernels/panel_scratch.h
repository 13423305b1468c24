// Target-independent helpers of the quantized panel kernels (qgemm_vnni-inl.h on AVX3_DL,
// qpanel_avx2-inl.h on AVX2): panel sizes, per-thread scratch, the stored rows of one panel,
// and a compile-time row count for few-row tiles. An ordinary header: matmul.cc includes it above
// its per-target code.
#pragma once

#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

#include "kernels/ops.h"

namespace kiln::kernels {

// Bytes from one panel of `panel_rows` rows to the next: exactly those rows' stored bytes (a
// panel only rearranges them), rounded up to a cache line.
inline int64_t QuantPanelStride(int64_t row_bytes, int panel_rows) {
  return (panel_rows * row_bytes + 63) / 64 * 64;
}

// Bytes of all of w's panels (ceil(rows / panel_rows) of them).
inline uint64_t QuantPanelBytes(const Matrix& w, int panel_rows) {
  const int64_t panels = (w.rows + panel_rows - 1) / panel_rows;
  return static_cast<uint64_t>(panels *
                               QuantPanelStride(static_cast<int64_t>(w.row_bytes), panel_rows));
}

// Per-thread scratch, 64-byte aligned, of at least `bytes`.
inline uint8_t* AlignedScratch(std::vector<uint8_t>& v, size_t bytes) {
  if (v.size() < bytes + 64) v.resize(bytes + 64);
  return reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(v.data()) + 63) & ~uintptr_t{63});
}

// The stored rows of the panel of `panel_rows` rows from weight row n; a partial last panel
// (cols < panel_rows rows left) is copied into `tail` with its missing rows zero.
inline const uint8_t* StoredPanelRows(const Matrix& w, int64_t n, int panel_rows, int cols,
                                      std::vector<uint8_t>& tail) {
  const int64_t rb = static_cast<int64_t>(w.row_bytes);
  const uint8_t* src = w.data + n * rb;
  if (cols == panel_rows) return src;
  uint8_t* t = AlignedScratch(tail, static_cast<size_t>(panel_rows * rb));
  std::memcpy(t, src, static_cast<size_t>(cols * rb));
  std::memset(t + cols * rb, 0, static_cast<size_t>((panel_rows - cols) * rb));
  return t;
}

// Runs fn(integral_constant<int, R>) with R = m, for 1 <= m <= 4 (few-row tiles: decode).
template <class F>
inline void WithFewRows(int64_t m, const F& fn) {
  switch (m) {
    case 4:
      fn(std::integral_constant<int, 4>());
      break;
    case 3:
      fn(std::integral_constant<int, 3>());
      break;
    case 2:
      fn(std::integral_constant<int, 2>());
      break;
    default:
      fn(std::integral_constant<int, 1>());
      break;
  }
}

}  // namespace kiln::kernels
