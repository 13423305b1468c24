// Scalar twins of the float kernels (see scalar_ops.h). They follow transformers' float32 math:
// every product and sum is a separately rounded float operation (no FMA contraction: this file
// is compiled for the baseline x86-64 target, which has no FMA).
#include "kernels/scalar_ops.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "util/error.h"

namespace kiln::kernels::scalar {

void RmsNorm(const float* x, const float* weight, int64_t n, float eps, float* out) {
  float sum_sq = 0.0f;
  for (int64_t i = 0; i < n; ++i) sum_sq += x[i] * x[i];
  const float inv_rms = 1.0f / std::sqrt(sum_sq / static_cast<float>(n) + eps);
  for (int64_t i = 0; i < n; ++i) out[i] = (x[i] * inv_rms) * weight[i];
}

void LayerNorm(const float* x, const float* weight, const float* bias, int64_t n, float eps,
               float* out) {
  double sum = 0.0;
  for (int64_t i = 0; i < n; ++i) sum += x[i];
  const double mean = sum / static_cast<double>(n);
  double sq = 0.0;
  for (int64_t i = 0; i < n; ++i) sq += (x[i] - mean) * (x[i] - mean);
  const double inv_std = 1.0 / std::sqrt(sq / static_cast<double>(n) + eps);
  for (int64_t i = 0; i < n; ++i) {
    out[i] = static_cast<float>((x[i] - mean) * inv_std * weight[i] + bias[i]);
  }
}

void Gelu(const float* x, int64_t n, GeluStyle style, float* out) {
  for (int64_t i = 0; i < n; ++i) {
    const double v = x[i];
    if (style == GeluStyle::kErf) {
      out[i] = static_cast<float>(0.5 * v * (1.0 + std::erf(v / std::sqrt(2.0))));
    } else {
      const double inner = std::sqrt(2.0 / M_PI) * (v + 0.044715 * v * v * v);
      out[i] = static_cast<float>(0.5 * v * (1.0 + std::tanh(inner)));
    }
  }
}

void RopeCosSin(const float* inv_freq, int half, int64_t pos, float* cos_out, float* sin_out) {
  for (int i = 0; i < half; ++i) {
    const float angle = static_cast<float>(pos) * inv_freq[i];
    cos_out[i] = static_cast<float>(std::cos(static_cast<double>(angle)));
    sin_out[i] = static_cast<float>(std::sin(static_cast<double>(angle)));
  }
}

void Rope(float* x, int n_heads, int head_dim, const float* inv_freq, int64_t pos,
          RopeStyle style) {
  const int half = head_dim / 2;
  std::vector<float> cos(half), sin(half);
  RopeCosSin(inv_freq, half, pos, cos.data(), sin.data());
  for (int h = 0; h < n_heads; ++h) {
    float* head = x + static_cast<int64_t>(h) * head_dim;
    for (int i = 0; i < half; ++i) {
      // The pair (a, b) rotates by the angle: (a cos - b sin, b cos + a sin).
      float* a = style == RopeStyle::kHalf ? &head[i] : &head[2 * i];
      float* b = style == RopeStyle::kHalf ? &head[i + half] : &head[2 * i + 1];
      const float a0 = *a, b0 = *b;
      *a = a0 * cos[i] - b0 * sin[i];
      *b = b0 * cos[i] + a0 * sin[i];
    }
  }
}

void SiluMul(const float* gate, const float* up, int64_t n, float* out) {
  for (int64_t i = 0; i < n; ++i) {
    const float g = gate[i];
    out[i] = (g / (1.0f + std::exp(-g))) * up[i];
  }
}

void AddInPlace(float* y, const float* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] += x[i];
}

void Softmax(float* x, int64_t n) {
  float max = -std::numeric_limits<float>::infinity();
  for (int64_t i = 0; i < n; ++i) max = std::max(max, x[i]);
  float sum = 0.0f;
  for (int64_t i = 0; i < n; ++i) {
    x[i] = std::exp(x[i] - max);
    sum += x[i];
  }
  const float inv_sum = 1.0f / sum;
  for (int64_t i = 0; i < n; ++i) x[i] *= inv_sum;
}

int64_t ArgMax(const float* x, int64_t n) {
  int64_t best = 0;
  float best_value = -std::numeric_limits<float>::infinity();
  for (int64_t i = 0; i < n; ++i) {
    if (x[i] > best_value) {  // first maximum; NaN never wins
      best_value = x[i];
      best = i;
    }
  }
  return best;
}

void Attention(const float* q, const int64_t* pos, int64_t n_tokens, const float* k, const float* v,
               int n_heads, int n_kv_heads, int head_dim, float scale, float* out,
               ThreadPool& /*pool*/) {
  KILN_CHECK(n_kv_heads > 0 && n_heads % n_kv_heads == 0, "Attention: ", n_heads,
             " heads not divisible by ", n_kv_heads, " kv heads");
  const int group = n_heads / n_kv_heads;
  const int64_t kv_stride = static_cast<int64_t>(n_kv_heads) * head_dim;
  std::vector<float> scores;
  for (int64_t t = 0; t < n_tokens; ++t) {
    for (int h = 0; h < n_heads; ++h) {
      const float* qh = q + (t * n_heads + h) * head_dim;
      const int64_t kv_off = static_cast<int64_t>(h / group) * head_dim;
      const int64_t n_ctx = pos[t] + 1;
      scores.assign(n_ctx, 0.0f);
      for (int64_t j = 0; j < n_ctx; ++j) {
        float dot = 0.0f;
        for (int d = 0; d < head_dim; ++d) dot += qh[d] * k[j * kv_stride + kv_off + d];
        scores[j] = dot * scale;
      }
      Softmax(scores.data(), n_ctx);
      float* o = out + (t * n_heads + h) * head_dim;
      std::fill(o, o + head_dim, 0.0f);
      for (int64_t j = 0; j < n_ctx; ++j) {
        for (int d = 0; d < head_dim; ++d) o[d] += scores[j] * v[j * kv_stride + kv_off + d];
      }
    }
  }
}

}  // namespace kiln::kernels::scalar
