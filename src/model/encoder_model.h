// A loaded BERT-style encoder (BERT, RoBERTa, XLM-RoBERTa; bare, sequence classification or
// extractive QA head) from a Hugging Face folder (config.json + safetensors), and its forward
// pass over a padding-free ragged batch: the sequences' tokens concatenated, each attending
// to all of its own tokens and none of the others'.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "formats/tensor.h"
#include "model/encoder_config.h"
#include "model/encoder_weights.h"
#include "util/huge_buffer.h"
#include "util/thread_pool.h"

namespace kiln {

struct EncoderBatch {
  std::span<const int32_t> tokens;    // [T]: the sequences one after another
  std::span<const int32_t> type_ids;  // [T] token type (segment) ids; empty: all 0
  std::span<const int64_t> lengths;   // [S] tokens of each sequence, in order; sum T
};

class EncoderModel {
 public:
  // `dir`: a folder with config.json and model.safetensors[.index.json]. kiln::Error when it
  // is not an encoder this layer serves, or a tensor is missing or misshapen. `weights`: the
  // layers' matrices converted at load to this type (f16, bf16, q8_0, q4_0, q4_1; nullopt:
  // as stored); embeddings, norms and heads stay as they are.
  static std::unique_ptr<EncoderModel> Load(const std::string& dir,
                                            std::optional<DType> weights = std::nullopt);
  ~EncoderModel();

  const EncoderConfig& config() const { return config_; }
  const std::string& path() const { return path_; }

  // Runs the batch and returns the last layer's hidden states [T, D], valid until the next
  // call. One call at a time (the model owns the activation scratch). kiln::Error when a token
  // or type id is out of range or a sequence is empty or longer than max_input_tokens.
  const float* Forward(const EncoderBatch& batch, ThreadPool& pool);

  // One sequence's embedding [D] from its hidden states [n, D].
  void Pool(const float* hidden, int64_t n, Pooling pooling, float* out) const;
  // Sequence classification: label logits [L] from the sequence's first-token state [D].
  void ClassifierLogits(const float* first, ThreadPool& pool, float* out);
  // Extractive QA: start and end logits of each token, out [n, 2], from hidden [n, D].
  void SpanLogits(const float* hidden, int64_t n, ThreadPool& pool, float* out);

 private:
  EncoderModel() = default;
  void CheckBatch(const EncoderBatch& batch) const;
  void Embed(const EncoderBatch& batch, ThreadPool& pool);
  void AttentionBlock(const EncoderLayerWeights& w, const EncoderBatch& batch, ThreadPool& pool);
  void MlpBlock(const EncoderLayerWeights& w, int64_t n, ThreadPool& pool);
  void EnsureScratch(int64_t tokens);
  void ConvertWeights(DType dtype);

  std::string path_;
  std::unique_ptr<WeightSource> source_;
  EncoderConfig config_;
  EncoderWeights weights_;
  HugeBuffer packed_weights_;
  std::vector<uint8_t> converted_;  // the layers' matrices after ConvertWeights
  struct Scratch {
    std::vector<float> x, h, q, k, v, attn, up;  // [T, D] ([T, F] for up)
    std::vector<int64_t> last;                   // [T]: each token's index in its sequence
    std::vector<float> head, head_out;           // [D] classification scratch
  } s_;
};

}  // namespace kiln
