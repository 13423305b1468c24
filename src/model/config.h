// Architecture hyper-parameters of a Llama-family decoder, from an HF config.json or from
// GGUF metadata, validated so the forward pass can trust them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kernels/ops.h"

namespace kiln {

class GgufFile;
class WeightSource;
struct HfConfig;

enum class Architecture { kLlama, kMistral, kQwen2, kQwen3 };

struct RopeScaling {
  enum class Type { kNone, kLinear, kLlama3 } type = Type::kNone;
  double factor = 1.0;
  double low_freq_factor = 1.0;   // llama3
  double high_freq_factor = 4.0;  // llama3
  int64_t original_max_position_embeddings = 8192;
};

struct ModelConfig {
  Architecture arch = Architecture::kLlama;
  std::string arch_name;  // as written in the file ("LlamaForCausalLM", "qwen2", ...)
  int64_t vocab_size = 0;
  int64_t hidden_size = 0;        // D
  int64_t intermediate_size = 0;  // F
  int64_t num_layers = 0;
  int64_t num_heads = 0;     // H
  int64_t num_kv_heads = 0;  // KV (GQA: H % KV == 0)
  int64_t head_dim = 0;      // hd
  int64_t max_position_embeddings = 2048;
  double rms_norm_eps = 1e-6;
  double rope_theta = 10000.0;
  RopeScaling rope_scaling;
  kernels::RopeStyle rope_style = kernels::RopeStyle::kHalf;
  bool tie_word_embeddings = false;
  bool attention_bias = false;  // q/k/v projections have biases (Qwen2)
  bool qk_norm = false;         // per-head RMSNorm of q and k before RoPE (Qwen3)
  std::vector<int64_t> eos_token_ids;
  int64_t bos_token_id = -1;

  // Throws kiln::Error("<source>: ...") when dimensions are inconsistent.
  void Validate(const std::string& source) const;
};

ModelConfig ModelConfigFromHf(const HfConfig& hf);
ModelConfig ModelConfigFromGguf(const GgufFile& gguf);
// The same with the tensors looked up in `tensors` (a Kiln artifact keeps its source's GGUF
// metadata apart from the tensors).
ModelConfig ModelConfigFromGguf(const GgufFile& gguf, const WeightSource& tensors);

const char* ArchitectureName(Architecture arch);

}  // namespace kiln
