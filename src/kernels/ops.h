// The kernels' public API: every SIMD loop the model runs. Implementations use Highway with
// runtime dispatch (one dispatch per call, never per element); each has a scalar twin in
// kiln::kernels::scalar (scalar_ops.h) that the tests compare against on every target.
//
// Shapes are given as [outer, inner] with the inner dimension contiguous.
#pragma once

#include <cstdint>
#include <span>

#include "util/dtype.h"
#include "util/thread_pool.h"

namespace kiln::kernels {

// A weight matrix W [rows = out features N, cols = in features K], row-major; each row is
// cols/block_elems blocks of `dtype` (GGML block layouts for quantized types).
// `packed`, when set, is a copy of the same weights in the layout the active SIMD target's
// kernels read fastest (PackMatrix); MatMul then reads it instead of `data`, with identical
// results. `data` stays valid (embedding lookups, other targets).
struct Matrix {
  DType dtype = DType::kF32;
  int64_t rows = 0;
  int64_t cols = 0;
  const uint8_t* data = nullptr;
  uint64_t row_bytes = 0;
  const uint8_t* packed = nullptr;
};

// y[M, N] = x[M, K] · W[N, K]^T (a Linear layer without bias).
// f32/f16 W: f32 products and accumulation.
// bf16 W: x is first rounded to bf16 (nearest even), as llama.cpp and bf16 hardware do; the
// products of two bf16 are exact in f32, the accumulation is f32 (on CPUs with AVX512_BF16 by
// vdpbf16ps, two multiply-adds per lane and instruction).
// Quantized W (q8_0, q4_0, q4_1): each x row is first quantized to 8-bit blocks of 32 exactly as
// llama.cpp's x86 quantize_row_q8_0/q8_1 do (d = amax/127 stored as f16, q = round-half-even
// of x*127/amax, q8_1's s = f16(d*sum q); see quantize.h), then the dot is done in integers per
// block and scaled by the f16 scales in f32; this matches llama.cpp's numerics up to the order
// of the f32 sum. K-quants throw kiln::Error for now. y must not alias x.
// Work is split over `pool` by output rows (activation quantization by x rows for large M).
// No allocation per call once scratch buffers have grown.
void MatMul(const Matrix& w, const float* x, int64_t m, float* y, ThreadPool& pool);

// Several weight matrices applied to the same x [M, K] (Q, K and V; gate and up):
// outs[i].y [M, rows_i] = x · outs[i].w^T, with the same numerics as MatMul, but as one parallel
// pass (one pool synchronization instead of one per matrix) with x quantized once. All weights
// must have the same cols; at most kMaxMatMulOutputs of them.
struct MatMulOutput {
  const Matrix* w = nullptr;
  float* y = nullptr;
};
inline constexpr int kMaxMatMulOutputs = 4;
void MatMulMulti(std::span<const MatMulOutput> outs, const float* x, int64_t m, ThreadPool& pool);

// Repacking at load. On AVX-512 VNNI CPUs q8_0 / q4_0 / q4_1 weights are read as 16-row panels
// (matmul's qgemm_vnni-inl.h), on AVX2 as 8-row panels (qpanel_avx2-inl.h); packing them once
// at load turns decode's strided row streams and per-call repacking into one contiguous stream. On
// AVX2 and AVX-512 f32 / f16 / bf16 weights are read as panels of one f32 vector's lanes of rows
// (fpanel-inl.h), a few long streams per worker instead of short row streams. PackedMatrixBytes:
// bytes of w's packed copy on this CPU (about w's own size), or 0 when the active target reads
// `data` as stored. PackMatrix writes it to dst (64-byte aligned); the caller then points w.packed
// at it.
uint64_t PackedMatrixBytes(const Matrix& w);
void PackMatrix(const Matrix& w, uint8_t* dst);

// dst[0, n) = row `row` of W dequantized to f32 (embedding lookup).
void DequantizeRow(const Matrix& w, int64_t row, float* dst);

// Quantizes n f32 values (n a multiple of the block size) into `t`'s layout, as GGML's
// reference quantizers do; used by writers and tests. f32/f16/bf16 convert (f16 / bf16 round to
// nearest even, SIMD where the CPU converts f16; dst 2-byte aligned), as the KV cache writes.
void QuantizeRow(DType t, const float* src, int64_t n, uint8_t* dst);

// out[i] = x[i] / sqrt(mean(x^2) + eps) * weight[i]; out may alias x.
void RmsNorm(const float* x, const float* weight, int64_t n, float eps, float* out);

// Encoders (BERT): out[i] = (x[i] - mean) / sqrt(var + eps) * weight[i] + bias[i], the mean
// and (biased) variance over x[0, n) as torch.nn.LayerNorm; out may alias x.
void LayerNorm(const float* x, const float* weight, const float* bias, int64_t n, float eps,
               float* out);

// GELU as transformers' hidden_act names it: kErf "gelu" (x/2 (1 + erf(x / sqrt 2)), erf to
// ~1e-7 relative), kTanh "gelu_new" / "gelu_pytorch_tanh". out may alias x.
enum class GeluStyle { kErf, kTanh };
void Gelu(const float* x, int64_t n, GeluStyle style, float* out);

// Rotary embedding in place on x [n_heads, head_dim] for position `pos`.
// inv_freq [head_dim / 2] already includes any rope scaling (e.g. llama3).
// kHalf: pairs (i, i + head_dim/2) (HF "rotate_half"; GGML NEOX mode).
// kInterleaved: pairs (2i, 2i + 1) (GGML NORM mode, used by llama.cpp for llama GGUFs, whose
// converter permuted Q and K rows accordingly).
enum class RopeStyle { kHalf, kInterleaved };
void Rope(float* x, int n_heads, int head_dim, const float* inv_freq, int64_t pos, RopeStyle style);

// out[i] = silu(gate[i]) * up[i]; out may alias gate or up.
void SiluMul(const float* gate, const float* up, int64_t n, float* out);

// y[i] += x[i].
void AddInPlace(float* y, const float* x, int64_t n);

// In-place softmax over x[0, n).
void Softmax(float* x, int64_t n);

// The index of the first largest value of x[0, n) (greedy decoding's pick); NaN never wins, and
// 0 when no value is above -inf (all banned) or n is 0.
int64_t ArgMax(const float* x, int64_t n);

// Causal attention for n_tokens new query tokens of one sequence.
// q   [n_tokens, n_heads, head_dim]
// k,v [n_ctx, n_kv_heads, head_dim] (the sequence's cache, rows 0..max(pos) filled)
// pos [n_tokens]: query t attends to cache rows 0..pos[t] inclusive.
// out [n_tokens, n_heads, head_dim]. GQA: head h reads kv head h / (n_heads / n_kv_heads).
// scale: usually 1/sqrt(head_dim). Parallel over (token, head).
void Attention(const float* q, const int64_t* pos, int64_t n_tokens, const float* k, const float* v,
               int n_heads, int n_kv_heads, int head_dim, float scale, float* out,
               ThreadPool& pool);

// Bidirectional attention of one sequence of n tokens (encoders): every query sees all n keys.
// q, k, v, out: [n, stride] rows (stride >= n_heads * head_dim), head h at columns
// [h * head_dim, (h + 1) * head_dim). The same result as Attention with every pos = n - 1, up
// to the order of the dot products' sums. Parallel over heads.
void BidirectionalAttention(const float* q, const float* k, const float* v, int64_t n,
                            int64_t stride, int n_heads, int head_dim, float scale, float* out,
                            ThreadPool& pool);

// Name of the SIMD target chosen at runtime ("AVX3", "AVX2", ...), for logs and benchmarks.
const char* ActiveTargetName();

}  // namespace kiln::kernels
