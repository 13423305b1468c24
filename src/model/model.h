// A loaded Llama-family model (llama, mistral, qwen2, qwen3): config, mmapped weights and the
// forward pass. Loads a GGUF file or a Hugging Face directory (config.json + safetensors).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "formats/tensor.h"
#include "model/config.h"
#include "model/kv_cache.h"
#include "model/weights.h"
#include "util/thread_pool.h"

namespace kiln {

class GgufFile;

class Model {
 public:
  // `path`: a .gguf file, or a directory with config.json and model.safetensors[.index.json].
  static std::unique_ptr<Model> Load(const std::string& path);

  const ModelConfig& config() const { return config_; }
  const std::string& path() const { return path_; }
  // The GGUF file when the model came from one (it also holds the tokenizer), else nullptr.
  const GgufFile* gguf() const { return gguf_; }

  // Runs tokens[T] of one sequence at positions[T] (each < kv.capacity()), appending their K/V
  // to `kv`, and writes logits: [T, V] when all_logits, else [1, V] for the last token.
  // One call at a time per Model (it owns the activation scratch).
  void Forward(std::span<const int32_t> tokens, std::span<const int64_t> positions, KvCache& kv,
               ThreadPool& pool, bool all_logits, float* logits);

 private:
  Model() = default;
  struct Scratch {
    std::vector<float> x, h, q, k, v, attn, gate, up;  // activations, [T, ...]
  };
  void EnsureScratch(int64_t tokens);
  void AttentionBlock(const LayerWeights& w, int64_t layer, std::span<const int64_t> positions,
                      KvCache& kv, ThreadPool& pool);
  void MlpBlock(const LayerWeights& w, int64_t n_tokens, ThreadPool& pool);

  std::string path_;
  std::unique_ptr<WeightSource> source_;
  const GgufFile* gguf_ = nullptr;
  ModelConfig config_;
  ModelWeights weights_;
  std::vector<float> rope_inv_freq_;  // [hd/2]
  Scratch s_;
};

}  // namespace kiln
