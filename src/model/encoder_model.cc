#include "model/encoder_model.h"

#include <cmath>
#include <filesystem>

#include "formats/hf_config.h"
#include "formats/safetensors.h"
#include "kernels/ops.h"
#include "model/packed_weights.h"
#include "util/error.h"

namespace kiln {
namespace {

// y[n, cols] += bias[cols] row by row.
void AddBias(float* y, int64_t n, const std::vector<float>& bias, ThreadPool& pool) {
  const int64_t cols = static_cast<int64_t>(bias.size());
  pool.ParallelFor(n, 8, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) kernels::AddInPlace(y + r * cols, bias.data(), cols);
  });
}

// x[n, D] = LayerNorm(h + x), the post-norm residual of BERT's sub-layers (h is overwritten).
void ResidualNorm(float* h, float* x, int64_t n, int64_t d, const std::vector<float>& w,
                  const std::vector<float>& b, float eps, ThreadPool& pool) {
  pool.ParallelFor(n, 8, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      kernels::AddInPlace(h + r * d, x + r * d, d);
      kernels::LayerNorm(h + r * d, w.data(), b.data(), d, eps, x + r * d);
    }
  });
}

}  // namespace

EncoderModel::~EncoderModel() = default;

std::unique_ptr<EncoderModel> EncoderModel::Load(const std::string& dir,
                                                 std::optional<DType> weights) {
  KILN_CHECK(std::filesystem::is_directory(dir), dir,
             ": an encoder is loaded from a Hugging Face folder (config.json + safetensors)");
  std::unique_ptr<EncoderModel> m(new EncoderModel());
  m->path_ = dir;
  const HfConfig hf = LoadHfConfig(dir);
  m->config_ = EncoderConfigFromHf(hf);
  m->source_ = std::make_unique<SafetensorsCheckpoint>(dir);
  m->weights_ = BindEncoderWeights(*m->source_, m->config_);
  if (weights) m->ConvertWeights(*weights);
  m->packed_weights_ = PackMatrices(EncoderMatMulWeights(m->weights_));
  return m;
}

// Every layer matrix re-encoded as `dtype` (row by row through f32, as the quantizers of
// `kiln export` do); a matrix whose rows are not whole blocks of `dtype` stays as it is.
void EncoderModel::ConvertWeights(DType dtype) {
  std::vector<kernels::Matrix*> matrices;
  for (EncoderLayerWeights& l : weights_.layers) {
    for (kernels::Matrix* m : {&l.wq, &l.wk, &l.wv, &l.wo, &l.w_in, &l.w_out}) {
      if (m->dtype != dtype && BytesForElements(dtype, static_cast<uint64_t>(m->cols))) {
        matrices.push_back(m);
      }
    }
  }
  uint64_t total = 0;
  for (const kernels::Matrix* m : matrices) {
    total += *BytesForElements(dtype, static_cast<uint64_t>(m->cols)) * m->rows;
  }
  converted_.assign(total, 0);
  uint8_t* at = converted_.data();
  std::vector<float> row;
  for (kernels::Matrix* m : matrices) {
    const uint64_t row_bytes = *BytesForElements(dtype, static_cast<uint64_t>(m->cols));
    row.resize(m->cols);
    for (int64_t r = 0; r < m->rows; ++r) {
      kernels::DequantizeRow(*m, r, row.data());
      kernels::QuantizeRow(dtype, row.data(), m->cols, at + r * row_bytes);
    }
    *m = kernels::Matrix{dtype, m->rows, m->cols, at, row_bytes, nullptr};
    at += row_bytes * m->rows;
  }
}

void EncoderModel::CheckBatch(const EncoderBatch& b) const {
  const int64_t t = static_cast<int64_t>(b.tokens.size());
  KILN_CHECK(b.type_ids.empty() || static_cast<int64_t>(b.type_ids.size()) == t,
             "encoder batch: ", b.type_ids.size(), " type ids for ", t, " tokens");
  int64_t sum = 0;
  for (int64_t n : b.lengths) {
    KILN_CHECK(n > 0 && n <= config_.max_input_tokens, "encoder batch: a sequence of ", n,
               " tokens (1 to ", config_.max_input_tokens, ")");
    sum += n;
  }
  KILN_CHECK(sum == t, "encoder batch: lengths add up to ", sum, ", not ", t, " tokens");
  for (int32_t id : b.tokens) {
    KILN_CHECK(id >= 0 && id < config_.vocab_size, "encoder batch: token id ", id,
               " outside the vocabulary (", config_.vocab_size, ")");
  }
  for (int32_t id : b.type_ids) {
    KILN_CHECK(id >= 0 && id < config_.type_vocab_size, "encoder batch: token type id ", id,
               " outside [0, ", config_.type_vocab_size, ")");
  }
}

void EncoderModel::EnsureScratch(int64_t tokens) {
  const auto need = static_cast<size_t>(tokens * config_.hidden_size);
  if (s_.x.size() < need) {
    for (auto* v : {&s_.x, &s_.h, &s_.q, &s_.k, &s_.v, &s_.attn}) v->resize(need);
    s_.up.resize(static_cast<size_t>(tokens * config_.intermediate_size));
    s_.last.resize(static_cast<size_t>(tokens));
  }
}

// x[t] = LayerNorm(word[token] + position[offset + i] + token_type[type]), i the token's
// index in its sequence.
void EncoderModel::Embed(const EncoderBatch& b, ThreadPool& pool) {
  const int64_t d = config_.hidden_size;
  std::vector<int64_t>& index = s_.last;  // reused: each token's position in its sequence
  int64_t t = 0;
  for (int64_t n : b.lengths) {
    for (int64_t i = 0; i < n; ++i) index[t++] = i;
  }
  const float eps = static_cast<float>(config_.layer_norm_eps);
  pool.ParallelFor(t, 8, [&](int64_t r0, int64_t r1) {
    std::vector<float> row(d);
    for (int64_t r = r0; r < r1; ++r) {
      float* x = s_.x.data() + r * d;
      kernels::DequantizeRow(weights_.word, b.tokens[r], x);
      kernels::DequantizeRow(weights_.position, config_.position_offset + index[r], row.data());
      kernels::AddInPlace(x, row.data(), d);
      kernels::DequantizeRow(weights_.token_type, b.type_ids.empty() ? 0 : b.type_ids[r],
                             row.data());
      kernels::AddInPlace(x, row.data(), d);
      kernels::LayerNorm(x, weights_.embed_norm.data(), weights_.embed_norm_b.data(), d, eps, x);
    }
  });
}

void EncoderModel::AttentionBlock(const EncoderLayerWeights& w, const EncoderBatch& b,
                                  ThreadPool& pool) {
  const int64_t d = config_.hidden_size, n = static_cast<int64_t>(b.tokens.size());
  const kernels::MatMulOutput qkv[] = {
      {&w.wq, s_.q.data()}, {&w.wk, s_.k.data()}, {&w.wv, s_.v.data()}};
  kernels::MatMulMulti(qkv, s_.x.data(), n, pool);  // q, k, v [T, D]
  AddBias(s_.q.data(), n, w.bq, pool);
  AddBias(s_.k.data(), n, w.bk, pool);
  AddBias(s_.v.data(), n, w.bv, pool);
  // Each sequence's tokens attend to all of that sequence's tokens and to no other's.
  const int heads = static_cast<int>(config_.num_heads), hd = static_cast<int>(config_.head_dim);
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
  int64_t start = 0;
  for (int64_t len : b.lengths) {
    const int64_t off = start * d;
    kernels::BidirectionalAttention(s_.q.data() + off, s_.k.data() + off, s_.v.data() + off, len, d,
                                    heads, hd, scale, s_.attn.data() + off, pool);
    start += len;
  }
  kernels::MatMul(w.wo, s_.attn.data(), n, s_.h.data(), pool);  // [T, D]
  AddBias(s_.h.data(), n, w.bo, pool);
  ResidualNorm(s_.h.data(), s_.x.data(), n, d, w.attn_norm, w.attn_norm_b,
               static_cast<float>(config_.layer_norm_eps), pool);
}

void EncoderModel::MlpBlock(const EncoderLayerWeights& w, int64_t n, ThreadPool& pool) {
  const int64_t d = config_.hidden_size, f = config_.intermediate_size;
  kernels::MatMul(w.w_in, s_.x.data(), n, s_.up.data(), pool);  // [T, F]
  pool.ParallelFor(n, 4, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      float* row = s_.up.data() + r * f;
      kernels::AddInPlace(row, w.b_in.data(), f);
      kernels::Gelu(row, f, config_.activation, row);
    }
  });
  kernels::MatMul(w.w_out, s_.up.data(), n, s_.h.data(), pool);  // [T, D]
  AddBias(s_.h.data(), n, w.b_out, pool);
  ResidualNorm(s_.h.data(), s_.x.data(), n, d, w.ffn_norm, w.ffn_norm_b,
               static_cast<float>(config_.layer_norm_eps), pool);
}

const float* EncoderModel::Forward(const EncoderBatch& batch, ThreadPool& pool) {
  CheckBatch(batch);
  const int64_t n = static_cast<int64_t>(batch.tokens.size());
  if (n == 0) return s_.x.data();
  EnsureScratch(n);
  Embed(batch, pool);
  for (const EncoderLayerWeights& w : weights_.layers) {
    AttentionBlock(w, batch, pool);
    MlpBlock(w, n, pool);
  }
  return s_.x.data();
}

void EncoderModel::Pool(const float* hidden, int64_t n, Pooling pooling, float* out) const {
  const int64_t d = config_.hidden_size;
  if (pooling == Pooling::kCls || pooling == Pooling::kLastToken) {
    const float* row = hidden + (pooling == Pooling::kCls ? 0 : (n - 1) * d);
    std::copy(row, row + d, out);
    return;
  }
  std::fill(out, out + d, 0.0f);
  for (int64_t t = 0; t < n; ++t) kernels::AddInPlace(out, hidden + t * d, d);
  const float inv = 1.0f / static_cast<float>(n);
  for (int64_t i = 0; i < d; ++i) out[i] *= inv;
}

void EncoderModel::ClassifierLogits(const float* first, ThreadPool& pool, float* out) {
  KILN_CHECK(config_.head == EncoderHead::kSequenceClassification, path_,
             ": not a sequence-classification model");
  const int64_t d = config_.hidden_size;
  s_.head.resize(d);
  s_.head_out.resize(d);
  const bool roberta_head = weights_.cls_dense.rows > 0;
  const kernels::Matrix& dense = roberta_head ? weights_.cls_dense : weights_.pooler;
  const std::vector<float>& dense_b = roberta_head ? weights_.cls_dense_b : weights_.pooler_b;
  kernels::MatMul(dense, first, 1, s_.head.data(), pool);
  for (int64_t i = 0; i < d; ++i) s_.head[i] = std::tanh(s_.head[i] + dense_b[i]);
  kernels::MatMul(weights_.classifier, s_.head.data(), 1, out, pool);
  kernels::AddInPlace(out, weights_.classifier_b.data(), weights_.classifier.rows);
}

void EncoderModel::SpanLogits(const float* hidden, int64_t n, ThreadPool& pool, float* out) {
  KILN_CHECK(config_.head == EncoderHead::kQuestionAnswering, path_,
             ": not a question-answering model");
  kernels::MatMul(weights_.qa, hidden, n, out, pool);  // [n, 2]
  AddBias(out, n, weights_.qa_b, pool);
}

}  // namespace kiln
