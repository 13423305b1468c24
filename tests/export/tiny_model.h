// A tiny random Llama GGUF for the export tests: 2 layers, hidden 64 (two q8_0 blocks per row,
// a multiple of every panel height), vocab 96; matrices in any dtype QuantizeRow writes.
#pragma once

#include <cstdint>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "formats/gguf_writer.h"
#include "formats/safetensors_writer.h"
#include "kernels/ops.h"
#include "util/dtype.h"

namespace kiln::testing_util {

struct TinyModelShape {
  int64_t vocab = 96, hidden = 64, ffn = 128, layers = 2, heads = 4, kv_heads = 2;
  bool tied = false;
};

inline std::vector<uint8_t> RandomMatrix(DType dtype, int64_t rows, int64_t cols,
                                         std::mt19937& rng) {
  std::normal_distribution<float> dist(0.0f, 0.3f);
  const uint64_t row_bytes = *BytesForElements(dtype, static_cast<uint64_t>(cols));
  std::vector<uint8_t> out(row_bytes * rows);
  std::vector<float> row(cols);
  for (int64_t r = 0; r < rows; ++r) {
    for (float& v : row) v = dist(rng);
    kernels::QuantizeRow(dtype, row.data(), cols, out.data() + r * row_bytes);
  }
  return out;
}

// The model's tensors in file order, with GGUF or Hugging Face names; cols 0: a norm [rows].
struct TinyTensor {
  std::string name;
  int64_t rows, cols;
};

inline std::vector<TinyTensor> TinyLlamaTensors(const TinyModelShape& s, bool hf) {
  const int64_t hd = s.hidden / s.heads, q = s.heads * hd, kv = s.kv_heads * hd;
  std::vector<TinyTensor> t;
  t.push_back({hf ? "model.embed_tokens.weight" : "token_embd.weight", s.vocab, s.hidden});
  for (int64_t l = 0; l < s.layers; ++l) {
    const std::string b = (hf ? "model.layers." : "blk.") + std::to_string(l) + ".";
    auto add = [&](const char* hf_name, const char* gguf_name, int64_t rows, int64_t cols) {
      t.push_back({b + (hf ? hf_name : gguf_name), rows, cols});
    };
    add("input_layernorm.weight", "attn_norm.weight", s.hidden, 0);
    add("self_attn.q_proj.weight", "attn_q.weight", q, s.hidden);
    add("self_attn.k_proj.weight", "attn_k.weight", kv, s.hidden);
    add("self_attn.v_proj.weight", "attn_v.weight", kv, s.hidden);
    add("self_attn.o_proj.weight", "attn_output.weight", s.hidden, q);
    add("post_attention_layernorm.weight", "ffn_norm.weight", s.hidden, 0);
    add("mlp.gate_proj.weight", "ffn_gate.weight", s.ffn, s.hidden);
    add("mlp.up_proj.weight", "ffn_up.weight", s.ffn, s.hidden);
    add("mlp.down_proj.weight", "ffn_down.weight", s.hidden, s.ffn);
  }
  t.push_back({hf ? "model.norm.weight" : "output_norm.weight", s.hidden, 0});
  if (!s.tied) t.push_back({hf ? "lm_head.weight" : "output.weight", s.vocab, s.hidden});
  return t;
}

inline std::vector<float> RandomNorm(int64_t n, std::mt19937& rng) {
  std::vector<float> v(n);
  std::uniform_real_distribution<float> dist(0.8f, 1.2f);
  for (float& x : v) x = dist(rng);
  return v;
}

// Writes the model to `path` with its matrices in `dtype`.
inline void WriteTinyLlama(const std::string& path, DType dtype, const TinyModelShape& s = {},
                           uint32_t seed = 7) {
  std::mt19937 rng(seed);
  GgufWriter w;
  w.SetString("general.architecture", "llama");
  w.SetUint32("llama.block_count", static_cast<uint32_t>(s.layers));
  w.SetUint32("llama.embedding_length", static_cast<uint32_t>(s.hidden));
  w.SetUint32("llama.feed_forward_length", static_cast<uint32_t>(s.ffn));
  w.SetUint32("llama.attention.head_count", static_cast<uint32_t>(s.heads));
  w.SetUint32("llama.attention.head_count_kv", static_cast<uint32_t>(s.kv_heads));
  w.SetUint32("llama.context_length", 256);
  w.SetFloat32("llama.attention.layer_norm_rms_epsilon", 1e-5f);
  w.SetFloat32("llama.rope.freq_base", 10000.0f);
  w.SetUint32("tokenizer.ggml.eos_token_id", 2);
  for (const TinyTensor& t : TinyLlamaTensors(s, /*hf=*/false)) {
    if (t.cols == 0) {
      w.AddTensorF32(t.name, {t.rows}, RandomNorm(t.rows, rng));
    } else {
      w.AddTensor(t.name, dtype, {t.rows, t.cols}, RandomMatrix(dtype, t.rows, t.cols, rng));
    }
  }
  w.Write(path);
}

// The same shapes as a Hugging Face folder: config.json and model.safetensors in `dtype` (f32,
// f16 or bf16), norms in f32.
inline void WriteTinyHfLlama(const std::string& dir, DType dtype, const TinyModelShape& s = {},
                             uint32_t seed = 7) {
  std::mt19937 rng(seed);
  SafetensorsWriter w;
  for (const TinyTensor& t : TinyLlamaTensors(s, /*hf=*/true)) {
    if (t.cols == 0) {
      w.AddTensorF32(t.name, {t.rows}, RandomNorm(t.rows, rng));
    } else {
      const std::vector<uint8_t> m = RandomMatrix(dtype, t.rows, t.cols, rng);
      w.AddTensor(t.name, dtype, {t.rows, t.cols}, m.data(), m.size());
    }
  }
  w.Write(dir + "/model.safetensors");
  std::ofstream(dir + "/config.json")
      << "{\"architectures\": [\"LlamaForCausalLM\"], \"model_type\": \"llama\", "
      << "\"vocab_size\": " << s.vocab << ", \"hidden_size\": " << s.hidden
      << ", \"intermediate_size\": " << s.ffn << ", \"num_hidden_layers\": " << s.layers
      << ", \"num_attention_heads\": " << s.heads << ", \"num_key_value_heads\": " << s.kv_heads
      << ", \"max_position_embeddings\": 256, \"rms_norm_eps\": 1e-5, "
      << "\"tie_word_embeddings\": " << (s.tied ? "true" : "false") << ", \"eos_token_id\": 2}";
}

}  // namespace kiln::testing_util
