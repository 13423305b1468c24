// Internal: one MatMul call as seen by the per-target row kernels (matmul-inl.h).
#pragma once

#include <cstdint>

#include "kernels/ops.h"
#include "kernels/quantize.h"

namespace kiln::kernels {

struct MatMulArgs {
  const Matrix* w = nullptr;  // [N, K]
  // [m, K] f32 activations (read by f32/f16 weights; for bf16 weights already rounded to bf16)
  const float* x = nullptr;
  // bf16 weights only: the same rounded x as bf16 pairs, [m, ceil(K / 2)] dwords (low half
  // x[2j], high half x[2j + 1]; odd K: high half of the last pair 0), for the vdpbf16ps panels.
  const uint32_t* x_bf16 = nullptr;
  ActsView acts;  // [m, K] quantized activations (read by quantized weights)
  int64_t m = 0;
  float* y = nullptr;                 // [m, N]
  bool prefetch = true;               // software prefetch of weights ahead of the first x tile
  bool float_decode_prefetch = true;  // the same for float panels at m = 1 (matmul.cc)
  bool prefetch_to_l2 = false;  // quantized panels' decode prefetch into L2, not L1 (matmul.cc)
  int decode_streams = 1;  // quantized panels' decode: 1, 2 or 4 panels side by side (matmul.cc)
  bool qgemm = true;  // quantized weights on AVX3_DL / AVX2: the panel kernels (KILN_QGEMM=0: off)
  bool bf16_dot = false;  // bf16 panels on AVX3_DL with AVX512_BF16: vdpbf16ps (matmul.cc)
  bool amx = false;       // quantized panels, m >= 16, on AVX3_DL with AMX-INT8 (matmul.cc)
  bool amx_bf16 = false;  // bf16 panels, every m, on AVX3_DL with AMX-BF16 (matmul.cc)
};

// KILN_QGEMM=0 runs quantized weights through the row kernels instead of the panels (for
// before/after measurements in one binary; fixed per process, so batch invariance holds).
bool QGemmEnabled();

}  // namespace kiln::kernels
