// Plain scalar twins of every kernel in ops.h, written for clarity: they define the kernels'
// numerics and are what the SIMD kernels are tested against on every target. Same signatures
// and semantics as ops.h (MatMul ignores the pool and runs on the calling thread).
#pragma once

#include <cstdint>

#include "kernels/ops.h"
#include "kernels/quantize.h"

namespace kiln::kernels::scalar {

void MatMul(const Matrix& w, const float* x, int64_t m, float* y, ThreadPool& pool);
void DequantizeRow(const Matrix& w, int64_t row, float* dst);
void QuantizeRow(DType t, const float* src, int64_t n, uint8_t* dst);
void RmsNorm(const float* x, const float* weight, int64_t n, float eps, float* out);
void LayerNorm(const float* x, const float* weight, const float* bias, int64_t n, float eps,
               float* out);
void Gelu(const float* x, int64_t n, GeluStyle style, float* out);
void Rope(float* x, int n_heads, int head_dim, const float* inv_freq, int64_t pos, RopeStyle style);
void SiluMul(const float* gate, const float* up, int64_t n, float* out);
void AddInPlace(float* y, const float* x, int64_t n);
void Softmax(float* x, int64_t n);
int64_t ArgMax(const float* x, int64_t n);
void Attention(const float* q, const int64_t* pos, int64_t n_tokens, const float* k, const float* v,
               int n_heads, int n_kv_heads, int head_dim, float scale, float* out,
               ThreadPool& pool);

// Building blocks of the quantized MatMul, shared with the tests (see quantize.h).
void QuantizeActs(const float* x, int64_t rows, const ActsView& out);
// Dot product of one quantized weight row (q8_0/q4_0/q4_1) with activation row `r` of `a`.
float DotQuantRow(DType t, const uint8_t* w_row, const ActsView& a, int64_t r);

// cos/sin of (float)pos * inv_freq[i] for i < half, in float as torch computes them (the angle
// is a float product; cos/sin are evaluated in double and rounded once). Shared with the SIMD
// Rope so both use identical tables.
void RopeCosSin(const float* inv_freq, int half, int64_t pos, float* cos_out, float* sin_out);

}  // namespace kiln::kernels::scalar
