// K-quant weights (GGML q4_K, q5_K, q6_K): dequantization and MatMul (internal to kernels/,
// reached through ops.h's MatMul and DequantizeRow; exposed for tests).
//
// Block layouts (util/dtype.h has the structs), element e of a 256-element super-block:
//   q4_K (144 B): f16 d, f16 dmin, scales[12], qs[128].
//     Sub-block s = e / 32 has 6-bit scale sc_s and min m_s unpacked from `scales`:
//       s < 4: sc = scales[s] & 63, m = scales[s + 4] & 63
//       s >= 4: sc = (scales[s + 4] & 15) | (scales[s - 4] >> 6) << 4,
//               m = (scales[s + 4] >> 4) | (scales[s] >> 6) << 4
//     Chunk j = e / 64 uses qs[32 j .. 32 j + 31]: low nibbles are elements 64 j + l, high
//     nibbles elements 64 j + 32 + l (l < 32).  value = (d sc_s) q - (dmin m_s).
//   q5_K (176 B): f16 d, f16 dmin, scales[12], qh[32], qs[128]: as q4_K, plus bit 2 j of qh[l]
//     as bit 4 of element 64 j + l and bit 2 j + 1 as bit 4 of element 64 j + 32 + l.
//   q6_K (210 B): ql[128], qh[64], int8 scales[16], f16 d. Half h = e / 128 uses
//     ql[64 h ..], qh[32 h ..]; for l < 32 the elements 128 h + {l, 32 + l, 64 + l, 96 + l}
//     take the low nibble of ql[l], the low nibble of ql[32 + l], the high nibble of ql[l], the
//     high nibble of ql[32 + l], and bits {0-1, 2-3, 4-5, 6-7} of qh[l] as bits 4-5.
//     value = (d scales[e / 16]) (q - 32).
//
// MatMul numerics follow llama.cpp (ggml_vec_dot_q{4,5,6}_K_q8_K): x rows are quantized per
// 256 elements to q8_K exactly as quantize_row_q8_K_ref does (the code x86 llama.cpp runs):
//   max = the first x_j of largest |x_j|,  iscale = -127 / max,
//   q_j = min(127, round_half_even(iscale * x_j)),  d = 1 / iscale (a float, not f16),
//   bsums[i] = sum of q over elements 16 i .. 16 i + 15   (all zero when max == 0).
// Per super-block the dot is exact integer math, then scaled in f32:
//   q4_K/q5_K: (d_x d) sum_s sc_s sum_{e in s} q_e x_e  -  (d_x dmin) sum_s m_s bsum_s
//   q6_K:      (d_x d) sum_s sc_s (sum_{e in s} q_e x_e - 32 bsum_s)
// and the super-block results are summed in f32. The x86 kernels split the integer sums over
// the same 8 int32 lanes and take the same f32 steps as llama.cpp's AVX2 vec_dot kernels, so
// their results are bit-identical to ggml_vec_dot_q*_K_q8_K (checked against llama.cpp's
// libggml-cpu); the scalar twins below differ from them only in the order of the f32 sums.
// Exception: on AVX2, q4_K, q6_K, q5_0 and q5_1 (on AVX3_DL q5_0, q5_1) run on 8-row panels packed
// at load (kpanel_avx2-inl.h; KILN_QGEMM=0 restores the row kernels), whose exact integer block
// sums take one f32 step per block and row: within float rounding of the twins, not bit-identical.
//
// q5_0 / q5_1 live here too: llama.cpp's K-quant mixes (Q4_K_M, Q5_K_M, ...) fall back to them
// for tensors whose rows are not whole super-blocks (SmolLM2-135M's 576 columns, for one).
//   q5_0 (22 B): f16 d, qh[4], qs[16]; q5_1 (24 B): f16 d, f16 m, qh[4], qs[16].
//   Element j < 16: low nibble of qs[j] | (bit j of qh) << 4; element j + 16: high nibble of
//   qs[j] | (bit j + 16 of qh) << 4.  value = (q - 16) d (q5_0),  q d + m (q5_1).
// Like q4_0 / q4_1 they take the q8_0 / q8_1 activations of quantize.h (QuantizeActs) and
// per block of 32: q5_0: d_w d_x sum((q_j - 16) x_j);  q5_1: d_w d_x sum(q_j x_j) + m_w s_x
// (x86 row kernels: bit-identical to ggml_vec_dot_q5_0_q8_0 / q5_1_q8_1 as well).
#pragma once

#include <cstdint>
#include <memory>
#include <span>

#include "kernels/ops.h"
#include "kernels/quantize.h"
#include "util/dtype.h"
#include "util/thread_pool.h"

namespace kiln::kernels {

bool IsKQuant(DType t);  // q4_K, q5_K, q6_K
// The weight types whose MatMul and dequantization are here: the K-quants, q5_0 and q5_1.
bool HasKQuantKernels(DType t);

// Non-owning view of q8_K activations: `rows` rows of k / 256 blocks each.
struct KActsView {
  int64_t k = 0;
  BlockQ8_K* blocks = nullptr;

  int64_t blocks_per_row() const { return k / kQK_K; }
  const BlockQ8_K* Row(int64_t r) const { return blocks + r * blocks_per_row(); }
  BlockQ8_K* Row(int64_t r) { return blocks + r * blocks_per_row(); }
};

// Owns the memory behind a KActsView; grows on demand, never shrinks (64-byte aligned).
class KActsBuffer {
 public:
  KActsView Get(int64_t rows, int64_t k);

 private:
  struct Free {
    void operator()(uint8_t* p) const;
  };
  std::unique_ptr<uint8_t[], Free> mem_;
  uint64_t capacity_ = 0;
};

// One MatMul call as seen by the per-target row loops (kquant-inl.h).
struct KMatMulArgs {
  const Matrix* w = nullptr;  // [N, K]
  KActsView kacts;            // [m, K] q8_K activations (K-quant weights)
  ActsView acts;              // [m, K] q8_0 / q8_1 activations (q5_0 / q5_1 weights)
  int64_t m = 0;
  float* y = nullptr;  // [m, N]
  bool panels = true;  // the panel kernels where they exist (KILN_QGEMM=0: row kernels)
};

// Quantizes x [rows, k] to q8_K (see above). SIMD, dispatched; exact: bit-identical to the
// scalar twin on every target.
void QuantizeActsQ8K(const float* x, int64_t rows, const KActsView& out);

// Packed layouts of HasKQuantKernels weights for this CPU's kernels (ops.h's PackedMatrixBytes
// and PackMatrix forward here): q4_K, q6_K, q5_0, q5_1 on AVX2, q5_0, q5_1 on AVX3_DL
// (kpanel_avx2-inl.h); 0 bytes: read as stored.
uint64_t KQuantPackedBytes(const Matrix& w);
void KQuantPack(const Matrix& w, uint8_t* dst);

// MatMul for HasKQuantKernels weights (ops.h's MatMul forwards here). SIMD, dispatched; rows
// split over the pool like the other types.
void KQuantMatMul(const Matrix& w, const float* x, int64_t m, float* y, ThreadPool& pool);
// ops.h's MatMulMulti for outputs that are all HasKQuantKernels weights: x quantized once per
// activation type (q8_K, q8_0/q8_1), all outputs' rows split over the pool in one pass.
void KQuantMatMulMulti(std::span<const MatMulOutput> outs, const float* x, int64_t m,
                       ThreadPool& pool);

// dst[0, n) = n elements (whole blocks) of HasKQuantKernels blocks at src, dequantized as
// GGML's dequantize_row_* does (bit-identical). SIMD, dispatched. False for other dtypes.
bool KQuantDequantize(DType t, const uint8_t* src, int64_t n, float* dst);

namespace scalar {

// Scalar twins: the definition of the numerics above.
void QuantizeActsQ8K(const float* x, int64_t rows, const KActsView& out);
void KQuantDequantize(DType t, const uint8_t* src, int64_t n, float* dst);
// Dot of one K-quant weight row with activation row `r` of `x`.
float KQuantDotRow(DType t, const uint8_t* w_row, const KActsView& x, int64_t r);
// Dot of one q5_0 / q5_1 weight row with activation row `r` of `x` (quantize.h).
float Q5DotRow(DType t, const uint8_t* w_row, const ActsView& x, int64_t r);
void KQuantMatMul(const Matrix& w, const float* x, int64_t m, float* y);

}  // namespace scalar
}  // namespace kiln::kernels
