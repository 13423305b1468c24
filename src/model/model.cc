#include "model/model.h"

#include <chrono>
#include <cmath>
#include <filesystem>

#include "formats/gguf.h"
#include "formats/hf_config.h"
#include "formats/kiln_artifact.h"
#include "formats/safetensors.h"
#include "kernels/paged_attention.h"
#include "kernels/target.h"
#include "model/packed_weights.h"
#include "model/rope_freqs.h"
#include "util/error.h"
#include "util/log.h"

namespace kiln {

Model::~Model() = default;

void Model::LoadArtifact(int verify_threads) {
  auto file = std::make_unique<ArtifactFile>(path_);
  const ArtifactManifest& manifest = file->manifest();
  const std::string why = kernels::TargetUnsupportedReason(manifest.target);
  if (!why.empty()) {
    throw ArtifactError(StrCat(path_, ": exported for target ", manifest.target, ", but ", why,
                               "; export it again here (kiln export --target native)"));
  }
  const auto start = std::chrono::steady_clock::now();
  file->CopyPackedToHugePages(std::max(1, verify_threads), /*verify=*/verify_threads > 0);
  log::Debug(StrCat(
      path_, ": packed weights copied", verify_threads > 0 ? " and verified" : "", " in ",
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), " s"));
  if (kernels::ActiveTarget() != manifest.target) kernels::UseTarget(manifest.target);
  const NameScheme scheme =
      manifest.name_scheme == "gguf" ? NameScheme::kGguf : NameScheme::kHuggingFace;
  if (scheme == NameScheme::kGguf) {
    const ArtifactRegion* meta = file->FindBlob("gguf-metadata");
    if (meta == nullptr) throw ArtifactError(path_ + ": no gguf-metadata blob");
    artifact_metadata_ = std::make_unique<GgufFile>(file->mapping(), meta->offset, meta->bytes,
                                                    path_ + ":gguf-metadata");
    gguf_ = artifact_metadata_.get();
    config_ = ModelConfigFromGguf(*gguf_, *file);
  } else {
    const std::optional<std::string_view> json = file->Blob("config.json");
    if (!json) throw ArtifactError(path_ + ": no config.json blob");
    config_ = ModelConfigFromHf(
        ParseHfConfig(*json, file->Blob("generation_config.json").value_or(""), path_));
  }
  weights_ = BindWeights(*file, config_, scheme);
  artifact_ = file.get();
  source_ = std::move(file);
}

std::unique_ptr<Model> Model::Load(const std::string& path, int verify_threads) {
  std::unique_ptr<Model> m(new Model());
  m->path_ = path;
  namespace fs = std::filesystem;
  if (IsArtifactFile(path)) {
    m->LoadArtifact(verify_threads);
  } else if (fs::is_directory(path)) {
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
  m->packed_weights_ = PackWeights(m->weights_);
  const auto& factors = m->weights_.rope_freq_factors;
  m->rope_inv_freq_ = ComputeRopeInvFreq(m->config_, factors.empty() ? nullptr : &factors);
  return m;
}

void Model::EnsureScratch(int64_t t) {
  const ModelConfig& c = config_;
  auto grow = [t](auto& v, int64_t width) {
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
  grow(s_.pos, 1);
}

void Model::CheckBatch(const Batch& batch, const PagedKvCache& kv) const {
  const int64_t n = static_cast<int64_t>(batch.tokens.size());
  KILN_CHECK(n > 0, "Forward: empty batch");
  for (int32_t id : batch.tokens) {
    KILN_CHECK(id >= 0 && id < config_.vocab_size, "token id ", id,
               " is outside the vocabulary [0, ", config_.vocab_size, ")");
  }
  int64_t next = 0;
  for (const BatchSequence& s : batch.seqs) {
    KILN_CHECK(s.token_begin == next && s.token_count > 0 && s.token_begin + s.token_count <= n,
               "Forward: batch sequences must tile the tokens in order");
    next += s.token_count;
    const int64_t last = s.start_pos + s.token_count - 1;
    KILN_CHECK(s.start_pos >= 0 && last < config_.max_position_embeddings, "position ", last,
               " is outside the model's context of ", config_.max_position_embeddings);
    KILN_CHECK(!s.want_logits || (s.num_logits >= 1 && s.num_logits <= s.token_count),
               "Forward: num_logits ", s.num_logits, " outside [1, ", s.token_count, "]");
    KILN_CHECK(last / kv.block_size() < static_cast<int64_t>(s.block_table.size()),
               "Forward: block table too short for position ", last);
    for (int32_t b : s.block_table) {
      KILN_CHECK(b >= 0 && b < kv.num_blocks(), "Forward: KV block id ", b, " out of range");
    }
  }
  KILN_CHECK(next == n, "Forward: batch sequences must cover every token");
}

void Model::Forward(const Batch& batch, PagedKvCache& kv, ThreadPool& pool, float* logits) {
  CheckBatch(batch, kv);
  const ModelConfig& c = config_;
  const int64_t n = static_cast<int64_t>(batch.tokens.size()), d = c.hidden_size;
  EnsureScratch(n);
  for (const BatchSequence& s : batch.seqs) {
    for (int64_t i = 0; i < s.token_count; ++i) s_.pos[s.token_begin + i] = s.start_pos + i;
  }
  // x [T, D] = embed[tokens]
  for (int64_t t = 0; t < n; ++t) {
    kernels::DequantizeRow(weights_.embed, batch.tokens[t], &s_.x[t * d]);
  }
  for (int64_t l = 0; l < c.num_layers; ++l) {
    const LayerWeights& w = weights_.layers[l];
    AttentionBlock(w, l, batch, kv, pool);
    MlpBlock(w, n, pool);
  }
  // Final norm of the rows that need logits, gathered into h [R, D]; LM head -> [R, V].
  const float eps = static_cast<float>(c.rms_norm_eps);
  int64_t rows = 0;
  for (const BatchSequence& s : batch.seqs) {
    if (!s.want_logits) continue;
    for (int64_t t = s.token_begin + s.token_count - s.num_logits;
         t < s.token_begin + s.token_count; ++t) {
      kernels::RmsNorm(&s_.x[t * d], weights_.final_norm.data(), d, eps, &s_.h[rows * d]);
      ++rows;
    }
  }
  if (rows > 0) kernels::MatMul(weights_.lm_head, s_.h.data(), rows, logits, pool);
}

void Model::ForwardSequence(std::span<const int32_t> tokens, int64_t start_pos, PagedKvCache& kv,
                            ThreadPool& pool, bool all_logits, float* logits) {
  Batch batch;
  BatchSequence seq;
  seq.start_pos = start_pos;
  for (int32_t b = 0; b < kv.num_blocks(); ++b) seq.block_table.push_back(b);
  if (!all_logits) {
    batch.tokens.assign(tokens.begin(), tokens.end());
    seq.token_count = static_cast<int64_t>(tokens.size());
    batch.seqs.push_back(seq);
    Forward(batch, kv, pool, logits);
    return;
  }
  // Every position's logits: one single-token sequence view per token, sharing the blocks.
  for (size_t i = 0; i < tokens.size(); ++i) {
    batch.tokens.push_back(tokens[i]);
    seq.token_begin = static_cast<int64_t>(i);
    seq.token_count = 1;
    seq.start_pos = start_pos + static_cast<int64_t>(i);
    batch.seqs.push_back(seq);
  }
  Forward(batch, kv, pool, logits);
}

// q, k: optional bias, optional per-head RMSNorm (Qwen3), then RoPE at the token's position.
void Model::QkvPostprocess(const LayerWeights& w, int64_t t) {
  const ModelConfig& c = config_;
  const int64_t hd = c.head_dim, q_dim = c.num_heads * hd, kv_dim = c.num_kv_heads * hd;
  const float eps = static_cast<float>(c.rms_norm_eps);
  float* q = &s_.q[t * q_dim];
  float* k = &s_.k[t * kv_dim];
  if (c.attention_bias) {
    kernels::AddInPlace(q, w.q_bias.data(), q_dim);
    kernels::AddInPlace(k, w.k_bias.data(), kv_dim);
    kernels::AddInPlace(&s_.v[t * kv_dim], w.v_bias.data(), kv_dim);
  }
  if (c.qk_norm) {
    for (int64_t h = 0; h < c.num_heads; ++h) {
      kernels::RmsNorm(q + h * hd, w.q_norm.data(), hd, eps, q + h * hd);
    }
    for (int64_t h = 0; h < c.num_kv_heads; ++h) {
      kernels::RmsNorm(k + h * hd, w.k_norm.data(), hd, eps, k + h * hd);
    }
  }
  const int ihd = static_cast<int>(hd);
  kernels::Rope(q, static_cast<int>(c.num_heads), ihd, rope_inv_freq_.data(), s_.pos[t],
                c.rope_style);
  kernels::Rope(k, static_cast<int>(c.num_kv_heads), ihd, rope_inv_freq_.data(), s_.pos[t],
                c.rope_style);
}

// x += o_proj(attention(q, K, V)) over the normed x; the new K/V rows go into the paged cache.
void Model::AttentionBlock(const LayerWeights& w, int64_t layer, const Batch& batch,
                           PagedKvCache& kv, ThreadPool& pool) {
  const ModelConfig& c = config_;
  const int64_t n = static_cast<int64_t>(batch.tokens.size());
  const int64_t d = c.hidden_size, hd = c.head_dim;
  const int64_t kv_dim = c.num_kv_heads * hd;
  const float eps = static_cast<float>(c.rms_norm_eps);
  for (int64_t t = 0; t < n; ++t) {
    kernels::RmsNorm(&s_.x[t * d], w.attn_norm.data(), d, eps, &s_.h[t * d]);
  }
  // q [T, H*hd], k [T, KV*hd], v [T, KV*hd] in one parallel pass
  const kernels::MatMulOutput qkv[] = {
      {&w.wq, s_.q.data()}, {&w.wk, s_.k.data()}, {&w.wv, s_.v.data()}};
  kernels::MatMulMulti(qkv, s_.h.data(), n, pool);
  const kernels::AttentionShape shape{static_cast<int>(c.num_heads),
                                      static_cast<int>(c.num_kv_heads), static_cast<int>(hd),
                                      1.0f / std::sqrt(static_cast<float>(hd))};
  // Every sequence's new K/V rows first (a sequence only reads its own blocks), then one
  // attention call for the whole batch: one pool dispatch, work balanced over the sequences.
  thread_local std::vector<kernels::PagedSeq> seqs;
  seqs.clear();
  for (const BatchSequence& s : batch.seqs) {
    const int32_t* table = s.block_table.data();
    for (int64_t t = s.token_begin; t < s.token_begin + s.token_count; ++t) {
      QkvPostprocess(w, t);
      kv.Write(layer, table, s_.pos[t], &s_.k[t * kv_dim], &s_.v[t * kv_dim]);
    }
    seqs.push_back({table, s.token_begin, s.token_count});
  }
  kernels::PagedAttention(s_.q.data(), s_.pos.data(), seqs, kv.View(layer, nullptr), shape,
                          s_.attn.data(), pool);
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
  // gate [T, F], up [T, F] in one parallel pass
  const kernels::MatMulOutput gate_up[] = {{&w.w_gate, s_.gate.data()}, {&w.w_up, s_.up.data()}};
  kernels::MatMulMulti(gate_up, s_.h.data(), n, pool);
  kernels::SiluMul(s_.gate.data(), s_.up.data(), n * f, s_.gate.data());
  kernels::MatMul(w.w_down, s_.gate.data(), n, s_.h.data(), pool);  // [T, D]
  kernels::AddInPlace(s_.x.data(), s_.h.data(), n * d);
}

}  // namespace kiln
