// Scalar twins of the quantization kernels and of MatMul (see scalar_ops.h).
#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <vector>

#include "kernels/kquant.h"
#include "kernels/scalar_ops.h"
#include "util/error.h"
#include "util/half.h"

namespace kiln::kernels::scalar {
namespace {

uint16_t LoadU16(const uint8_t* p) {
  uint16_t v;
  std::memcpy(&v, p, 2);
  return v;
}

void StoreU16(uint16_t v, uint8_t* p) { std::memcpy(p, &v, 2); }

void CheckBlocks(DType t, int64_t n) {
  const DTypeInfo& info = GetDTypeInfo(t);
  KILN_CHECK(n % info.block_elems == 0, "kernels: ", info.name, " needs a multiple of ",
             info.block_elems, " elements, got ", n);
}

[[noreturn]] void Unsupported(DType t, const char* what) {
  throw Error(StrCat("kernels: ", what, " for ", GetDTypeInfo(t).name, " is not supported yet"));
}

// GGML quantize_row_q8_0_ref: d = amax / 127, q = roundf(x / d) (half away from zero).
void QuantizeQ8_0(const float* x, uint8_t* blk) {
  float amax = 0.0f;
  for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(x[j]));
  const float d = amax / 127.0f;
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  StoreU16(F32ToF16(d), blk);
  for (int j = 0; j < 32; ++j) {
    blk[2 + j] = static_cast<uint8_t>(static_cast<int8_t>(std::round(x[j] * id)));
  }
}

// GGML quantize_row_q4_0_ref: d = (signed value of largest magnitude) / -8,
// q = min(15, trunc(x / d + 8.5)).
void QuantizeQ4_0(const float* x, uint8_t* blk) {
  float amax = 0.0f, max = 0.0f;
  for (int j = 0; j < 32; ++j) {
    if (amax < std::fabs(x[j])) {
      amax = std::fabs(x[j]);
      max = x[j];
    }
  }
  const float d = max / -8.0f;
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  StoreU16(F32ToF16(d), blk);
  for (int j = 0; j < 16; ++j) {
    const int lo = std::min(15, static_cast<int>(x[j] * id + 8.5f));
    const int hi = std::min(15, static_cast<int>(x[j + 16] * id + 8.5f));
    blk[2 + j] = static_cast<uint8_t>(lo | (hi << 4));
  }
}

// GGML quantize_row_q4_1_ref: d = (max - min) / 15, m = min, q = min(15, trunc((x - m) / d + 0.5)).
void QuantizeQ4_1(const float* x, uint8_t* blk) {
  float min = FLT_MAX, max = -FLT_MAX;
  for (int j = 0; j < 32; ++j) {
    min = std::min(min, x[j]);
    max = std::max(max, x[j]);
  }
  const float d = (max - min) / 15.0f;
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  StoreU16(F32ToF16(d), blk);
  StoreU16(F32ToF16(min), blk + 2);
  for (int j = 0; j < 16; ++j) {
    const int lo = std::min(15, static_cast<int>((x[j] - min) * id + 0.5f));
    const int hi = std::min(15, static_cast<int>((x[j + 16] - min) * id + 0.5f));
    blk[4 + j] = static_cast<uint8_t>(lo | (hi << 4));
  }
}

// One q8_0/q4_0/q4_1 block -> 32 floats: q d, (n - 8) d or n d + m.
void DequantizeBlock(DType t, const uint8_t* blk, float* dst) {
  const float d = F16ToF32(LoadU16(blk));
  if (t == DType::kQ8_0) {
    for (int j = 0; j < 32; ++j) dst[j] = static_cast<float>(static_cast<int8_t>(blk[2 + j])) * d;
    return;
  }
  const float m = t == DType::kQ4_1 ? F16ToF32(LoadU16(blk + 2)) : 0.0f;
  const uint8_t* nibbles = blk + (t == DType::kQ4_1 ? 4 : 2);
  const int offset = t == DType::kQ4_0 ? 8 : 0;
  for (int j = 0; j < 16; ++j) {
    dst[j] = static_cast<float>((nibbles[j] & 0x0F) - offset) * d + m;
    dst[j + 16] = static_cast<float>((nibbles[j] >> 4) - offset) * d + m;
  }
}

// Integer dot of one weight block with 32 activation quants.
int32_t BlockDot(DType t, const uint8_t* blk, const int8_t* q) {
  int32_t sum = 0;
  if (t == DType::kQ8_0) {
    for (int j = 0; j < 32; ++j) sum += static_cast<int8_t>(blk[2 + j]) * q[j];
    return sum;
  }
  const uint8_t* nibbles = blk + (t == DType::kQ4_0 ? 2 : 4);
  const int offset = t == DType::kQ4_0 ? 8 : 0;  // q4_0 values are (nibble - 8) * d
  for (int j = 0; j < 16; ++j) {
    sum += ((nibbles[j] & 0x0F) - offset) * q[j];
    sum += ((nibbles[j] >> 4) - offset) * q[j + 16];
  }
  return sum;
}

}  // namespace

void QuantizeRow(DType t, const float* src, int64_t n, uint8_t* dst) {
  CheckBlocks(t, n);
  const int bytes = GetDTypeInfo(t).block_bytes;
  switch (t) {
    case DType::kF32:
      std::memcpy(dst, src, static_cast<size_t>(n) * 4);
      return;
    case DType::kF16:
      for (int64_t i = 0; i < n; ++i) StoreU16(F32ToF16(src[i]), dst + 2 * i);
      return;
    case DType::kBF16:
      for (int64_t i = 0; i < n; ++i) StoreU16(F32ToBf16(src[i]), dst + 2 * i);
      return;
    case DType::kQ8_0:
      for (int64_t b = 0; b < n / 32; ++b) QuantizeQ8_0(src + 32 * b, dst + b * bytes);
      return;
    case DType::kQ4_0:
      for (int64_t b = 0; b < n / 32; ++b) QuantizeQ4_0(src + 32 * b, dst + b * bytes);
      return;
    case DType::kQ4_1:
      for (int64_t b = 0; b < n / 32; ++b) QuantizeQ4_1(src + 32 * b, dst + b * bytes);
      return;
    default:
      Unsupported(t, "QuantizeRow");
  }
}

void DequantizeRow(const Matrix& w, int64_t row, float* dst) {
  CheckBlocks(w.dtype, w.cols);
  const uint8_t* src = w.data + row * w.row_bytes;
  const int bytes = GetDTypeInfo(w.dtype).block_bytes;
  switch (w.dtype) {
    case DType::kF32:
      std::memcpy(dst, src, static_cast<size_t>(w.cols) * 4);
      return;
    case DType::kF16:
      for (int64_t i = 0; i < w.cols; ++i) dst[i] = F16ToF32(LoadU16(src + 2 * i));
      return;
    case DType::kBF16:
      for (int64_t i = 0; i < w.cols; ++i) dst[i] = Bf16ToF32(LoadU16(src + 2 * i));
      return;
    case DType::kQ8_0:
    case DType::kQ4_0:
    case DType::kQ4_1:
      for (int64_t b = 0; b < w.cols / 32; ++b)
        DequantizeBlock(w.dtype, src + b * bytes, dst + 32 * b);
      return;
    case DType::kQ4_K:
    case DType::kQ5_K:
    case DType::kQ6_K:
    case DType::kQ5_0:
    case DType::kQ5_1:
      KQuantDequantize(w.dtype, src, w.cols, dst);  // kquant_scalar.cc
      return;
    default:
      Unsupported(w.dtype, "DequantizeRow");
  }
}

void QuantizeActs(const float* x, int64_t rows, const ActsView& out) {
  const int64_t nb = out.blocks();
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t b = 0; b < nb; ++b) {
      const float* xb = x + r * out.k + b * kQBlock;
      int8_t* q = out.qs + r * out.k + b * kQBlock;
      float amax = 0.0f;
      for (int j = 0; j < kQBlock; ++j) amax = std::max(amax, std::fabs(xb[j]));
      const float d = amax / 127.0f;
      const float id = amax != 0.0f ? 127.0f / amax : 0.0f;
      int32_t sum = 0;
      for (int j = 0; j < kQBlock; ++j) {
        q[j] = static_cast<int8_t>(std::nearbyint(xb[j] * id));  // ties to even
        sum += q[j];
      }
      const int64_t i = r * nb + b;
      out.ds[2 * i] = F16ToF32(F32ToF16(d));
      out.ds[2 * i + 1] = F16ToF32(F32ToF16(d * static_cast<float>(sum)));
      out.sums[i] = sum;
    }
  }
}

float DotQuantRow(DType t, const uint8_t* w_row, const ActsView& a, int64_t r) {
  const ActsView x = a.Row(r);
  const int bytes = GetDTypeInfo(t).block_bytes;
  float acc = 0.0f, acc_min = 0.0f;
  for (int64_t b = 0; b < x.blocks(); ++b) {
    const uint8_t* blk = w_row + b * bytes;
    const float dw = F16ToF32(LoadU16(blk));
    const int32_t isum = BlockDot(t, blk, x.qs + b * kQBlock);
    acc += (dw * x.ds[2 * b]) * static_cast<float>(isum);
    // q4_1: sum_j (n_j d_w + m_w) q_j d_x = d_w d_x sum_j n_j q_j + m_w (d_x sum_j q_j).
    if (t == DType::kQ4_1) acc_min += F16ToF32(LoadU16(blk + 2)) * x.ds[2 * b + 1];
  }
  return acc + acc_min;
}

void MatMul(const Matrix& w, const float* x, int64_t m, float* y, ThreadPool& /*pool*/) {
  CheckBlocks(w.dtype, w.cols);
  const int64_t n_out = w.rows, k = w.cols;
  if (w.dtype == DType::kF32 || w.dtype == DType::kF16 || w.dtype == DType::kBF16) {
    // bf16 weights multiply x rounded to bf16 (ops.h).
    std::vector<float> rounded;
    const float* xs = x;
    if (w.dtype == DType::kBF16) {
      rounded.resize(m * k);
      for (int64_t i = 0; i < m * k; ++i) rounded[i] = Bf16ToF32(F32ToBf16(x[i]));
      xs = rounded.data();
    }
    std::vector<float> row(k);
    for (int64_t n = 0; n < n_out; ++n) {
      scalar::DequantizeRow(w, n, row.data());
      for (int64_t r = 0; r < m; ++r) {
        float acc = 0.0f;
        for (int64_t i = 0; i < k; ++i) acc += xs[r * k + i] * row[i];
        y[r * n_out + n] = acc;
      }
    }
    return;
  }
  if (HasKQuantKernels(w.dtype)) {  // kquant_scalar.cc
    KQuantMatMul(w, x, m, y);
    return;
  }
  if (w.dtype != DType::kQ8_0 && w.dtype != DType::kQ4_0 && w.dtype != DType::kQ4_1) {
    Unsupported(w.dtype, "MatMul");
  }
  ActsBuffer buffer;
  const ActsView acts = buffer.Get(m, k);
  scalar::QuantizeActs(x, m, acts);
  for (int64_t n = 0; n < n_out; ++n) {
    for (int64_t r = 0; r < m; ++r) {
      y[r * n_out + n] = DotQuantRow(w.dtype, w.data + n * w.row_bytes, acts, r);
    }
  }
}

}  // namespace kiln::kernels::scalar
