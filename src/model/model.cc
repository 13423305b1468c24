#include "model/model.h"

#include <cmath>
#include <filesystem>

#include "formats/gguf.h"
#include "formats/hf_config.h"
#include "formats/safetensors.h"
#include "model/rope_freqs.h"
#include "util/error.h"

namespace kiln {

std::unique_ptr<Model> Model::Load(const std::string& path) {
  std::unique_ptr<Model> m(new Model());
  m->path_ = path;
  namespace fs = std::filesystem;
  if (fs::is_directory(path)) {
    HfConfig hf = LoadHfConfig(path);
    m->config_ = ModelConfigFromHf(hf);
    m->source_ = std::make_unique<SafetensorsCheckpoint>(path);
    m->weights_ = BindWeights(*m->source_, m->config_, NameScheme::kHuggingFace);
  } else {
    KILN_CHECK(fs::exists(path), path, ": no such file or directory");
    auto gguf = std::make_unique<GgufFile>(path);
    m->gguf_ = gguf.get();
    m->config_ = ModelConfigFromGguf(*gguf);
    m->source_ = std::move(gguf);
    m->weights_ = BindWeights(*m->source_, m->config_, NameScheme::kGguf);
  }
  const auto& factors = m->weights_.rope_freq_factors;
  m->rope_inv_freq_ = ComputeRopeInvFreq(m->config_, factors.empty() ? nullptr : &factors);
  return m;
}

void Model::EnsureScratch(int64_t t) {
  const ModelConfig& c = config_;
  auto grow = [t](std::vector<float>& v, int64_t width) {
    if (static_cast<int64_t>(v.size()) < t * width) v.resize(t * width);
  };
  grow(s_.x, c.hidden_size);
  grow(s_.h, c.hidden_size);
  grow(s_.q, c.num_heads * c.head_dim);
  grow(s_.k, c.num_kv_heads * c.head_dim);
  grow(s_.v, c.num_kv_heads * c.head_dim);
  grow(s_.attn, c.num_heads * c.head_dim);
  grow(s_.gate, c.intermediate_size);
  grow(s_.up, c.intermediate_size);
}

void Model::Forward(std::span<const int32_t> tokens, std::span<const int64_t> positions,
                    KvCache& kv, ThreadPool& pool, bool all_logits, float* logits) {
  const ModelConfig& c = config_;
  const int64_t n = static_cast<int64_t>(tokens.size());
  KILN_CHECK(n > 0 && positions.size() == tokens.size(), "Forward: need one position per token");
  for (int64_t t = 0; t < n; ++t) {
    KILN_CHECK(tokens[t] >= 0 && tokens[t] < c.vocab_size, "token id ", tokens[t],
               " is outside the vocabulary [0, ", c.vocab_size, ")");
    KILN_CHECK(positions[t] >= 0 && positions[t] < kv.capacity(), "position ", positions[t],
               " is outside the KV cache [0, ", kv.capacity(), ")");
  }
  EnsureScratch(n);
  const int64_t d = c.hidden_size;
  // x [T, D] = embed[tokens]
  for (int64_t t = 0; t < n; ++t) kernels::DequantizeRow(weights_.embed, tokens[t], &s_.x[t * d]);
  for (int64_t l = 0; l < c.num_layers; ++l) {
    const LayerWeights& w = weights_.layers[l];
    AttentionBlock(w, l, positions, kv, pool);
    MlpBlock(w, n, pool);
  }
  // Final norm and LM head, on every row or only the last one.
  const float eps = static_cast<float>(c.rms_norm_eps);
  const int64_t first = all_logits ? 0 : n - 1;
  for (int64_t t = first; t < n; ++t) {
    kernels::RmsNorm(&s_.x[t * d], weights_.final_norm.data(), d, eps, &s_.h[t * d]);
  }
  kernels::MatMul(weights_.lm_head, &s_.h[first * d], n - first, logits, pool);
}

// x += o_proj(attention(rope(q), rope(k), v)) over the normed x; K/V appended to the cache.
void Model::AttentionBlock(const LayerWeights& w, int64_t layer,
                           std::span<const int64_t> positions, KvCache& kv, ThreadPool& pool) {
  const ModelConfig& c = config_;
  const int64_t n = static_cast<int64_t>(positions.size());
  const int64_t d = c.hidden_size, hd = c.head_dim;
  const int64_t q_dim = c.num_heads * hd, kv_dim = c.num_kv_heads * hd;
  const float eps = static_cast<float>(c.rms_norm_eps);
  for (int64_t t = 0; t < n; ++t) {
    kernels::RmsNorm(&s_.x[t * d], w.attn_norm.data(), d, eps, &s_.h[t * d]);
  }
  kernels::MatMul(w.wq, s_.h.data(), n, s_.q.data(), pool);  // q [T, H*hd]
  kernels::MatMul(w.wk, s_.h.data(), n, s_.k.data(), pool);  // k [T, KV*hd]
  kernels::MatMul(w.wv, s_.h.data(), n, s_.v.data(), pool);  // v [T, KV*hd]
  float* k_cache = kv.K(layer);  // [capacity, KV, hd]
  float* v_cache = kv.V(layer);
  for (int64_t t = 0; t < n; ++t) {
    float* q = &s_.q[t * q_dim];
    float* k = &s_.k[t * kv_dim];
    float* v = &s_.v[t * kv_dim];
    if (c.attention_bias) {
      kernels::AddInPlace(q, w.q_bias.data(), q_dim);
      kernels::AddInPlace(k, w.k_bias.data(), kv_dim);
      kernels::AddInPlace(v, w.v_bias.data(), kv_dim);
    }
    if (c.qk_norm) {
      for (int64_t h = 0; h < c.num_heads; ++h) {
        kernels::RmsNorm(q + h * hd, w.q_norm.data(), hd, eps, q + h * hd);
      }
      for (int64_t h = 0; h < c.num_kv_heads; ++h) {
        kernels::RmsNorm(k + h * hd, w.k_norm.data(), hd, eps, k + h * hd);
      }
    }
    const int nh = static_cast<int>(c.num_heads), nkv = static_cast<int>(c.num_kv_heads);
    kernels::Rope(q, nh, static_cast<int>(hd), rope_inv_freq_.data(), positions[t], c.rope_style);
    kernels::Rope(k, nkv, static_cast<int>(hd), rope_inv_freq_.data(), positions[t],
                  c.rope_style);
    std::copy(k, k + kv_dim, k_cache + positions[t] * kv_dim);
    std::copy(v, v + kv_dim, v_cache + positions[t] * kv_dim);
  }
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
  kernels::Attention(s_.q.data(), positions.data(), n, k_cache, v_cache,
                     static_cast<int>(c.num_heads), static_cast<int>(c.num_kv_heads),
                     static_cast<int>(hd), scale, s_.attn.data(), pool);
  kernels::MatMul(w.wo, s_.attn.data(), n, s_.h.data(), pool);  // [T, D]
  kernels::AddInPlace(s_.x.data(), s_.h.data(), n * d);
}

// x += down(silu(gate(h)) * up(h)), h = ffn_norm(x).
void Model::MlpBlock(const LayerWeights& w, int64_t n, ThreadPool& pool) {
  const ModelConfig& c = config_;
  const int64_t d = c.hidden_size, f = c.intermediate_size;
  const float eps = static_cast<float>(c.rms_norm_eps);
  for (int64_t t = 0; t < n; ++t) {
    kernels::RmsNorm(&s_.x[t * d], w.ffn_norm.data(), d, eps, &s_.h[t * d]);
  }
  kernels::MatMul(w.w_gate, s_.h.data(), n, s_.gate.data(), pool);  // [T, F]
  kernels::MatMul(w.w_up, s_.h.data(), n, s_.up.data(), pool);      // [T, F]
  kernels::SiluMul(s_.gate.data(), s_.up.data(), n * f, s_.gate.data());
  kernels::MatMul(w.w_down, s_.gate.data(), n, s_.h.data(), pool);  // [T, D]
  kernels::AddInPlace(s_.x.data(), s_.h.data(), n * d);
}

}  // namespace kiln
