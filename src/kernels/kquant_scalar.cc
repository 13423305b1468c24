// Scalar twins of the K-quant kernels (see kquant.h for the layouts and numerics), and the
// q8_K activation quantizer that every target shares.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "kernels/kquant.h"
#include "kernels/scalar_ops.h"
#include "util/error.h"
#include "util/half.h"

namespace kiln::kernels {
namespace {

float LoadF16(const uint8_t* p) {
  uint16_t v;
  std::memcpy(&v, p, 2);
  return F16ToF32(v);
}

// Scale and min of sub-block s (0..7) of a q4_K / q5_K super-block from its 12 packed bytes.
void ScaleMinK4(const uint8_t* q, int s, int* sc, int* m) {
  if (s < 4) {
    *sc = q[s] & 63;
    *m = q[s + 4] & 63;
  } else {
    *sc = (q[s + 4] & 0x0F) | ((q[s - 4] >> 6) << 4);
    *m = (q[s + 4] >> 4) | ((q[s] >> 6) << 4);
  }
}

// The unsigned quant of element e (0..255) of a super-block: 0..15, 0..31 or 0..63.
int QuantOf(DType t, const uint8_t* blk, int e) {
  if (t == DType::kQ6_K) {
    const uint8_t* ql = blk + offsetof(BlockQ6_K, ql) + 64 * (e / 128);
    const uint8_t* qh = blk + offsetof(BlockQ6_K, qh) + 32 * (e / 128);
    const int i = (e % 128) / 32, l = e % 32;  // i: which of the four 32-element groups
    const int low = (i & 1) ? ql[32 + l] : ql[l];
    const int nibble = i < 2 ? (low & 0x0F) : (low >> 4);
    return nibble | (((qh[l] >> (2 * i)) & 3) << 4);
  }
  const uint8_t* qs = blk + (t == DType::kQ4_K ? offsetof(BlockQ4_K, qs) : offsetof(BlockQ5_K, qs));
  const int j = e / 64, l = e % 32;
  const bool high = (e % 64) >= 32;
  int q = high ? (qs[32 * j + l] >> 4) : (qs[32 * j + l] & 0x0F);
  if (t == DType::kQ5_K) {
    const uint8_t qh = blk[offsetof(BlockQ5_K, qh) + l];
    q |= ((qh >> (2 * j + (high ? 1 : 0))) & 1) << 4;
  }
  return q;
}

// The unsigned 5-bit quant of element j (0..31) of a q5_0 / q5_1 block.
int Q5QuantOf(DType t, const uint8_t* blk, int j) {
  const int off = t == DType::kQ5_0 ? 2 : 4;  // after d (and m)
  uint32_t qh;
  std::memcpy(&qh, blk + off, 4);
  const uint8_t* qs = blk + off + 4;
  const int nibble = j < 16 ? (qs[j] & 0x0F) : (qs[j - 16] >> 4);
  return nibble | static_cast<int>(((qh >> j) & 1) << 4);
}

int BlockBytes(DType t) { return GetDTypeInfo(t).block_bytes; }

void CheckKQuant(DType t, int64_t n) {
  const DTypeInfo& info = GetDTypeInfo(t);
  KILN_CHECK(HasKQuantKernels(t), "kernels: ", info.name, " has no K-quant kernel");
  KILN_CHECK(n % info.block_elems == 0, "kernels: ", info.name, " needs a multiple of ",
             info.block_elems, " elements, got ", n);
}

}  // namespace

bool IsKQuant(DType t) { return t == DType::kQ4_K || t == DType::kQ5_K || t == DType::kQ6_K; }

bool HasKQuantKernels(DType t) { return IsKQuant(t) || t == DType::kQ5_0 || t == DType::kQ5_1; }

namespace scalar {

void QuantizeActsQ8K(const float* x, int64_t rows, const KActsView& out) {
  const int64_t nb = out.blocks_per_row();
  for (int64_t i = 0; i < rows * nb; ++i) {
    const float* xb = x + i * kQK_K;
    BlockQ8_K& b = out.blocks[i];
    float max = 0.0f, amax = 0.0f;
    for (int j = 0; j < kQK_K; ++j) {
      const float ax = std::fabs(xb[j]);
      if (ax > amax) {
        amax = ax;
        max = xb[j];
      }
    }
    if (amax == 0.0f) {
      b.d = 0.0f;
      std::memset(b.qs, 0, sizeof(b.qs));
      std::memset(b.bsums, 0, sizeof(b.bsums));
      continue;
    }
    const float iscale = -127.0f / max;
    for (int j = 0; j < kQK_K; ++j) {
      // nearbyint: round half to even, like GGML's nearest_int (the 1.5 * 2^23 trick).
      const float v = std::nearbyint(iscale * xb[j]);
      b.qs[j] = static_cast<int8_t>(std::min(127.0f, v));
    }
    for (int g = 0; g < kQK_K / 16; ++g) {
      int sum = 0;
      for (int j = 0; j < 16; ++j) sum += b.qs[16 * g + j];
      b.bsums[g] = static_cast<int16_t>(sum);
    }
    b.d = 1.0f / iscale;
  }
}

void KQuantDequantize(DType t, const uint8_t* src, int64_t n, float* dst) {
  CheckKQuant(t, n);
  if (t == DType::kQ5_0 || t == DType::kQ5_1) {
    for (int64_t b = 0; b < n / 32; ++b) {
      const uint8_t* blk = src + b * BlockBytes(t);
      const float d = LoadF16(blk);
      const float m = t == DType::kQ5_1 ? LoadF16(blk + 2) : 0.0f;
      const int offset = t == DType::kQ5_0 ? 16 : 0;
      for (int j = 0; j < 32; ++j) {
        dst[32 * b + j] = static_cast<float>(Q5QuantOf(t, blk, j) - offset) * d + m;
      }
    }
    return;
  }
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    const uint8_t* blk = src + b * BlockBytes(t);
    float* y = dst + b * kQK_K;
    if (t == DType::kQ6_K) {
      const float d = LoadF16(blk + offsetof(BlockQ6_K, d));
      const int8_t* sc = reinterpret_cast<const int8_t*>(blk + offsetof(BlockQ6_K, scales));
      for (int e = 0; e < kQK_K; ++e) {
        y[e] = d * static_cast<float>(sc[e / 16]) * static_cast<float>(QuantOf(t, blk, e) - 32);
      }
      continue;
    }
    const float d = LoadF16(blk), dmin = LoadF16(blk + 2);
    const uint8_t* scales = blk + offsetof(BlockQ4_K, scales);
    for (int s = 0; s < 8; ++s) {
      int sc, m;
      ScaleMinK4(scales, s, &sc, &m);
      const float d1 = d * static_cast<float>(sc), m1 = dmin * static_cast<float>(m);
      for (int e = 32 * s; e < 32 * s + 32; ++e) {
        y[e] = d1 * static_cast<float>(QuantOf(t, blk, e)) - m1;
      }
    }
  }
}

float KQuantDotRow(DType t, const uint8_t* w_row, const KActsView& x, int64_t r) {
  const BlockQ8_K* xb = x.Row(r);
  float acc = 0.0f, acc_min = 0.0f;
  for (int64_t b = 0; b < x.blocks_per_row(); ++b) {
    const uint8_t* blk = w_row + b * BlockBytes(t);
    const int8_t* q = xb[b].qs;
    int32_t isum = 0;
    if (t == DType::kQ6_K) {
      const int8_t* sc = reinterpret_cast<const int8_t*>(blk + offsetof(BlockQ6_K, scales));
      for (int s = 0; s < 16; ++s) {
        int32_t dot = 0;
        for (int e = 16 * s; e < 16 * s + 16; ++e) dot += QuantOf(t, blk, e) * q[e];
        isum += sc[s] * (dot - 32 * xb[b].bsums[s]);
      }
      acc += (xb[b].d * LoadF16(blk + offsetof(BlockQ6_K, d))) * static_cast<float>(isum);
      continue;
    }
    int32_t msum = 0;
    for (int s = 0; s < 8; ++s) {
      int sc, m;
      ScaleMinK4(blk + offsetof(BlockQ4_K, scales), s, &sc, &m);
      int32_t dot = 0;
      for (int e = 32 * s; e < 32 * s + 32; ++e) dot += QuantOf(t, blk, e) * q[e];
      isum += sc * dot;
      msum += m * (xb[b].bsums[2 * s] + xb[b].bsums[2 * s + 1]);
    }
    acc += (xb[b].d * LoadF16(blk)) * static_cast<float>(isum);
    acc_min += (xb[b].d * LoadF16(blk + 2)) * static_cast<float>(msum);
  }
  return acc - acc_min;
}

float Q5DotRow(DType t, const uint8_t* w_row, const ActsView& a, int64_t r) {
  const ActsView x = a.Row(r);
  float acc = 0.0f, acc_min = 0.0f;
  const int offset = t == DType::kQ5_0 ? 16 : 0;
  for (int64_t b = 0; b < x.blocks(); ++b) {
    const uint8_t* blk = w_row + b * BlockBytes(t);
    int32_t isum = 0;
    for (int j = 0; j < 32; ++j) isum += (Q5QuantOf(t, blk, j) - offset) * x.qs[32 * b + j];
    acc += (LoadF16(blk) * x.ds[2 * b]) * static_cast<float>(isum);
    // q5_1: sum_j (q_j d_w + m_w) q8_j d_x = d_w d_x sum_j q_j q8_j + m_w (d_x sum_j q8_j).
    if (t == DType::kQ5_1) acc_min += LoadF16(blk + 2) * x.ds[2 * b + 1];
  }
  return acc + acc_min;
}

void KQuantMatMul(const Matrix& w, const float* x, int64_t m, float* y) {
  CheckKQuant(w.dtype, w.cols);
  if (!IsKQuant(w.dtype)) {  // q5_0 / q5_1: q8_0 / q8_1 activations
    ActsBuffer buffer;
    const ActsView acts = buffer.Get(m, w.cols);
    scalar::QuantizeActs(x, m, acts);
    for (int64_t n = 0; n < w.rows; ++n) {
      for (int64_t r = 0; r < m; ++r) {
        y[r * w.rows + n] = Q5DotRow(w.dtype, w.data + n * w.row_bytes, acts, r);
      }
    }
    return;
  }
  KActsBuffer buffer;
  const KActsView acts = buffer.Get(m, w.cols);
  scalar::QuantizeActsQ8K(x, m, acts);
  for (int64_t n = 0; n < w.rows; ++n) {
    for (int64_t r = 0; r < m; ++r) {
      y[r * w.rows + n] = KQuantDotRow(w.dtype, w.data + n * w.row_bytes, acts, r);
    }
  }
}

}  // namespace scalar

}  // namespace kiln::kernels
