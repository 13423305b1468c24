#include "model/config.h"

#include <nlohmann/json.hpp>

#include "formats/gguf.h"
#include "formats/hf_config.h"
#include "util/error.h"

namespace kiln {
namespace {

constexpr int64_t kMaxDim = int64_t{1} << 20;  // any single dimension above this is corrupt

Architecture ArchitectureFromHf(const HfConfig& hf) {
  std::string name;
  auto it = hf.config.find("architectures");
  if (it != hf.config.end() && it->is_array() && !it->empty() && (*it)[0].is_string()) {
    name = (*it)[0].get<std::string>();
  } else if (auto mt = hf.GetString("model_type")) {
    name = *mt;
  }
  if (name == "LlamaForCausalLM" || name == "llama") return Architecture::kLlama;
  if (name == "MistralForCausalLM" || name == "mistral") return Architecture::kMistral;
  if (name == "Qwen2ForCausalLM" || name == "qwen2") return Architecture::kQwen2;
  if (name == "Qwen3ForCausalLM" || name == "qwen3") return Architecture::kQwen3;
  throw Error(StrCat(hf.dir, "/config.json: unsupported architecture '", name,
                     "' (supported: LlamaForCausalLM, MistralForCausalLM, Qwen2ForCausalLM, "
                     "Qwen3ForCausalLM)"));
}

// transformers < 5 writes rope_theta + rope_scaling; 5.x writes rope_parameters.
void ReadHfRope(const HfConfig& hf, ModelConfig& c) {
  if (auto theta = hf.GetFloat("rope_theta")) c.rope_theta = *theta;
  const nlohmann::json* scaling = nullptr;
  for (const char* key : {"rope_scaling", "rope_parameters"}) {
    auto it = hf.config.find(key);
    if (it != hf.config.end() && it->is_object()) scaling = &*it;
  }
  if (scaling == nullptr) return;
  const std::string where = hf.dir + "/config.json: rope scaling";
  auto num = [&](const char* key, double fallback) {
    auto it = scaling->find(key);
    if (it == scaling->end() || it->is_null()) return fallback;
    KILN_CHECK(it->is_number(), where, ": '", key, "' must be a number");
    return it->get<double>();
  };
  c.rope_theta = num("rope_theta", c.rope_theta);
  std::string type = "default";
  for (const char* key : {"rope_type", "type"}) {
    auto it = scaling->find(key);
    if (it != scaling->end() && it->is_string()) type = it->get<std::string>();
  }
  if (type == "default") return;
  c.rope_scaling.factor = num("factor", 1.0);
  if (type == "linear") {
    c.rope_scaling.type = RopeScaling::Type::kLinear;
  } else if (type == "llama3") {
    c.rope_scaling.type = RopeScaling::Type::kLlama3;
    c.rope_scaling.low_freq_factor = num("low_freq_factor", 1.0);
    c.rope_scaling.high_freq_factor = num("high_freq_factor", 4.0);
    c.rope_scaling.original_max_position_embeddings =
        static_cast<int64_t>(num("original_max_position_embeddings", 8192));
  } else {
    throw Error(StrCat(where, ": unsupported rope_type '", type, "'"));
  }
}

}  // namespace

const char* ArchitectureName(Architecture arch) {
  switch (arch) {
    case Architecture::kLlama: return "llama";
    case Architecture::kMistral: return "mistral";
    case Architecture::kQwen2: return "qwen2";
    case Architecture::kQwen3: return "qwen3";
  }
  return "?";
}

void ModelConfig::Validate(const std::string& source) const {
  auto in_range = [&](const char* name, int64_t v) {
    KILN_CHECK(v > 0 && v <= kMaxDim, source, ": ", name, " = ", v, " is out of range");
  };
  in_range("vocab_size", vocab_size);
  in_range("hidden_size", hidden_size);
  in_range("intermediate_size", intermediate_size);
  in_range("num_layers", num_layers);
  in_range("num_heads", num_heads);
  in_range("num_kv_heads", num_kv_heads);
  in_range("head_dim", head_dim);
  KILN_CHECK(num_heads % num_kv_heads == 0, source, ": num_heads (", num_heads,
             ") must be a multiple of num_kv_heads (", num_kv_heads, ")");
  KILN_CHECK(head_dim % 2 == 0, source, ": head_dim must be even for RoPE, got ", head_dim);
  KILN_CHECK(rms_norm_eps > 0 && rope_theta > 0, source, ": rms_norm_eps and rope_theta must be > 0");
  KILN_CHECK(rope_scaling.factor > 0, source, ": rope scaling factor must be > 0");
  KILN_CHECK(max_position_embeddings > 0, source, ": max_position_embeddings must be > 0");
}

ModelConfig ModelConfigFromHf(const HfConfig& hf) {
  ModelConfig c;
  c.arch = ArchitectureFromHf(hf);
  c.arch_name = ArchitectureName(c.arch);
  const std::string where = hf.dir + "/config.json";
  auto required = [&](const char* key) {
    auto v = hf.GetInt(key);
    KILN_CHECK(v.has_value(), where, ": missing '", key, "'");
    return *v;
  };
  c.vocab_size = required("vocab_size");
  c.hidden_size = required("hidden_size");
  c.intermediate_size = required("intermediate_size");
  c.num_layers = required("num_hidden_layers");
  c.num_heads = required("num_attention_heads");
  c.num_kv_heads = hf.GetInt("num_key_value_heads").value_or(c.num_heads);
  KILN_CHECK(c.num_heads > 0, where, ": num_attention_heads must be > 0");
  c.head_dim = hf.GetInt("head_dim").value_or(c.hidden_size / c.num_heads);
  c.max_position_embeddings = hf.GetInt("max_position_embeddings").value_or(2048);
  c.rms_norm_eps = hf.GetFloat("rms_norm_eps").value_or(1e-6);
  ReadHfRope(hf, c);
  c.rope_style = kernels::RopeStyle::kHalf;  // HF checkpoints use rotate_half
  c.tie_word_embeddings = hf.GetBool("tie_word_embeddings").value_or(false);
  c.attention_bias = c.arch == Architecture::kQwen2 || hf.GetBool("attention_bias").value_or(false);
  c.qk_norm = c.arch == Architecture::kQwen3;
  c.eos_token_ids = hf.GetIntList("eos_token_id");
  auto bos = hf.GetIntList("bos_token_id");
  if (!bos.empty()) c.bos_token_id = bos[0];
  c.Validate(where);
  return c;
}

ModelConfig ModelConfigFromGguf(const GgufFile& gguf) { return ModelConfigFromGguf(gguf, gguf); }

ModelConfig ModelConfigFromGguf(const GgufFile& gguf, const WeightSource& tensors) {
  ModelConfig c;
  const std::string where = gguf.Describe();
  auto arch = gguf.GetString("general.architecture");
  KILN_CHECK(arch.has_value(), where, ": missing general.architecture");
  c.arch_name = *arch;
  if (*arch == "llama") {
    c.arch = Architecture::kLlama;
  } else if (*arch == "qwen2") {
    c.arch = Architecture::kQwen2;
  } else if (*arch == "qwen3") {
    c.arch = Architecture::kQwen3;
  } else {
    throw Error(StrCat(where, ": unsupported architecture '", *arch,
                       "' (supported: llama, qwen2, qwen3)"));
  }
  const std::string p = *arch + ".";
  auto required = [&](const std::string& key) {
    auto v = gguf.GetInt(p + key);
    KILN_CHECK(v.has_value(), where, ": missing ", p, key);
    return *v;
  };
  c.hidden_size = required("embedding_length");
  c.intermediate_size = required("feed_forward_length");
  c.num_layers = required("block_count");
  c.num_heads = required("attention.head_count");
  c.num_kv_heads = gguf.GetInt(p + "attention.head_count_kv").value_or(c.num_heads);
  KILN_CHECK(c.num_heads > 0, where, ": attention.head_count must be > 0");
  c.head_dim = gguf.GetInt(p + "attention.key_length").value_or(c.hidden_size / c.num_heads);
  c.max_position_embeddings = gguf.GetInt(p + "context_length").value_or(2048);
  c.rms_norm_eps = gguf.GetFloat(p + "attention.layer_norm_rms_epsilon").value_or(1e-5);
  c.rope_theta = gguf.GetFloat(p + "rope.freq_base").value_or(10000.0);
  if (auto type = gguf.GetString(p + "rope.scaling.type"); type && *type == "linear") {
    c.rope_scaling.type = RopeScaling::Type::kLinear;
    c.rope_scaling.factor = gguf.GetFloat(p + "rope.scaling.factor").value_or(1.0);
  }
  // llama.cpp's converter permutes Q/K rows of llama checkpoints for GGML's NORM rope
  // (adjacent pairs); qwen2/qwen3 keep the HF layout and use NEOX (rotate_half).
  c.rope_style = c.arch == Architecture::kLlama ? kernels::RopeStyle::kInterleaved
                                                : kernels::RopeStyle::kHalf;
  c.attention_bias = tensors.Find("blk.0.attn_q.bias") != nullptr;
  c.qk_norm = tensors.Find("blk.0.attn_q_norm.weight") != nullptr;
  c.tie_word_embeddings = tensors.Find("output.weight") == nullptr;
  const TensorView* embd = tensors.Find("token_embd.weight");
  KILN_CHECK(embd != nullptr && embd->shape.size() == 2, where,
             ": missing or malformed tensor token_embd.weight");
  c.vocab_size = gguf.GetInt(p + "vocab_size").value_or(embd->shape[0]);
  if (auto eos = gguf.GetInt("tokenizer.ggml.eos_token_id")) c.eos_token_ids.push_back(*eos);
  if (auto bos = gguf.GetInt("tokenizer.ggml.bos_token_id")) c.bos_token_id = *bos;
  c.Validate(where);
  return c;
}

}  // namespace kiln
