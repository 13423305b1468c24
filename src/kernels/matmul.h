// Internal: one MatMul call as seen by the per-target row kernels (matmul-inl.h).
#pragma once

#include <cstdint>

#include "kernels/ops.h"
#include "kernels/quantize.h"

namespace kiln::kernels {

struct MatMulArgs {
  const Matrix* w = nullptr;  // [N, K]
  const float* x = nullptr;   // [m, K] f32 activations (read by f32/f16/bf16 weights)
  ActsView acts;              // [m, K] quantized activations (read by quantized weights)
  int64_t m = 0;
  float* y = nullptr;                 // [m, N]
  bool prefetch = true;               // software prefetch of weights ahead of the first x tile
  bool float_decode_prefetch = true;  // the same for float panels at m = 1 (matmul.cc)
  bool qgemm = true;  // quantized weights on AVX3_DL / AVX2: the panel kernels (KILN_QGEMM=0: off)
};

// KILN_QGEMM=0 runs quantized weights through the row kernels instead of the panels (for
// before/after measurements in one binary; fixed per process, so batch invariance holds).
bool QGemmEnabled();

}  // namespace kiln::kernels
