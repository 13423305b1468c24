// A loaded Llama-family model (llama, mistral, qwen2, qwen3): config, mmapped weights and the
// forward pass. Loads a GGUF file or a Hugging Face directory (config.json + safetensors).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "formats/tensor.h"
#include "model/batch.h"
#include "model/config.h"
#include "model/paged_kv_cache.h"
#include "model/weights.h"
#include "util/huge_buffer.h"
#include "util/thread_pool.h"

namespace kiln {

class ArtifactFile;
class GgufFile;

class Model {
 public:
  // `path`: a .gguf file, a directory with config.json and model.safetensors[.index.json], or
  // a Kiln artifact (`kiln export`), whose checksums are verified on `verify_threads` threads
  // (0: not verified) and whose target the kernels are then pinned to (kernels/target.h).
  // A bad artifact throws ArtifactError.
  static std::unique_ptr<Model> Load(const std::string& path, int verify_threads = 2);
  ~Model();  // out of line: members hold types only declared here

  const ModelConfig& config() const { return config_; }
  const std::string& path() const { return path_; }
  // The GGUF file when the model came from one (it also holds the tokenizer), else nullptr.
  // (For an artifact exported from GGUF: its metadata, without tensors.)
  const GgufFile* gguf() const { return gguf_; }
  // The artifact the model was mapped from, else nullptr.
  const ArtifactFile* artifact() const { return artifact_; }
  // Element type of the attention's projections (layer 0's wq): what "auto" KV types follow.
  DType attention_weight_dtype() const { return weights_.layers.at(0).wq.dtype; }

  // Runs the batch's new tokens [T] (several sequences concatenated), writing their K/V into
  // `kv` at the rows their block tables name, and writes logits [R, V]: num_logits rows for each
  // sequence with want_logits (its last tokens, in position order), in batch order. One call at a
  // time per Model (it owns the activation scratch).
  void Forward(const Batch& batch, PagedKvCache& kv, ThreadPool& pool, float* logits);

  // Convenience for one sequence whose KV blocks are 0, 1, 2, ... of `kv`: tokens at positions
  // start_pos.., logits of every token ([T, V]) or of the last one ([1, V]).
  void ForwardSequence(std::span<const int32_t> tokens, int64_t start_pos, PagedKvCache& kv,
                       ThreadPool& pool, bool all_logits, float* logits);

 private:
  Model() = default;
  struct Scratch {
    std::vector<float> x, h, q, k, v, attn, gate, up;  // activations, [T, ...]
    std::vector<int64_t> pos;                          // [T]
  };
  void LoadArtifact(int verify_threads);
  void EnsureScratch(int64_t tokens);
  void CheckBatch(const Batch& batch, const PagedKvCache& kv) const;
  void AttentionBlock(const LayerWeights& w, int64_t layer, const Batch& batch, PagedKvCache& kv,
                      ThreadPool& pool);
  void QkvPostprocess(const LayerWeights& w, int64_t t);
  void MlpBlock(const LayerWeights& w, int64_t n_tokens, ThreadPool& pool);

  std::string path_;
  std::unique_ptr<WeightSource> source_;
  std::unique_ptr<GgufFile> artifact_metadata_;  // an artifact's "gguf-metadata" blob
  const GgufFile* gguf_ = nullptr;
  const ArtifactFile* artifact_ = nullptr;
  ModelConfig config_;
  ModelWeights weights_;
  HugeBuffer packed_weights_;  // weights_' matrices repacked for the kernels (packed_weights.h)
  std::vector<float> rope_inv_freq_;  // [hd/2]
  Scratch s_;
};

}  // namespace kiln
