#include "model/weights.h"

#include "kernels/ops.h"
#include "model/tensor_binder.h"
#include "util/error.h"

namespace kiln {
namespace {

enum class Slot {
  kAttnNorm,
  kQ,
  kK,
  kV,
  kO,
  kQBias,
  kKBias,
  kVBias,
  kQNorm,
  kKNorm,
  kFfnNorm,
  kGate,
  kUp,
  kDown
};

std::string LayerTensorName(NameScheme scheme, int64_t layer, Slot slot) {
  static const char* const kHf[] = {"input_layernorm.weight",
                                    "self_attn.q_proj.weight",
                                    "self_attn.k_proj.weight",
                                    "self_attn.v_proj.weight",
                                    "self_attn.o_proj.weight",
                                    "self_attn.q_proj.bias",
                                    "self_attn.k_proj.bias",
                                    "self_attn.v_proj.bias",
                                    "self_attn.q_norm.weight",
                                    "self_attn.k_norm.weight",
                                    "post_attention_layernorm.weight",
                                    "mlp.gate_proj.weight",
                                    "mlp.up_proj.weight",
                                    "mlp.down_proj.weight"};
  static const char* const kGguf[] = {
      "attn_norm.weight",   "attn_q.weight",      "attn_k.weight",   "attn_v.weight",
      "attn_output.weight", "attn_q.bias",        "attn_k.bias",     "attn_v.bias",
      "attn_q_norm.weight", "attn_k_norm.weight", "ffn_norm.weight", "ffn_gate.weight",
      "ffn_up.weight",      "ffn_down.weight"};
  const int i = static_cast<int>(slot);
  if (scheme == NameScheme::kHuggingFace) {
    return "model.layers." + std::to_string(layer) + "." + kHf[i];
  }
  return "blk." + std::to_string(layer) + "." + kGguf[i];
}

LayerWeights BindLayer(const TensorBinder& b, const ModelConfig& c, NameScheme scheme,
                       int64_t layer) {
  auto name = [&](Slot s) { return LayerTensorName(scheme, layer, s); };
  const int64_t d = c.hidden_size, q_dim = c.num_heads * c.head_dim;
  const int64_t kv_dim = c.num_kv_heads * c.head_dim, f = c.intermediate_size;
  LayerWeights w;
  w.attn_norm = b.Vector(name(Slot::kAttnNorm), d);
  w.wq = b.Matrix(name(Slot::kQ), q_dim, d);
  w.wk = b.Matrix(name(Slot::kK), kv_dim, d);
  w.wv = b.Matrix(name(Slot::kV), kv_dim, d);
  w.wo = b.Matrix(name(Slot::kO), d, q_dim);
  if (c.attention_bias) {
    w.q_bias = b.Vector(name(Slot::kQBias), q_dim);
    w.k_bias = b.Vector(name(Slot::kKBias), kv_dim);
    w.v_bias = b.Vector(name(Slot::kVBias), kv_dim);
  }
  if (c.qk_norm) {
    w.q_norm = b.Vector(name(Slot::kQNorm), c.head_dim);
    w.k_norm = b.Vector(name(Slot::kKNorm), c.head_dim);
  }
  w.ffn_norm = b.Vector(name(Slot::kFfnNorm), d);
  w.w_gate = b.Matrix(name(Slot::kGate), f, d);
  w.w_up = b.Matrix(name(Slot::kUp), f, d);
  w.w_down = b.Matrix(name(Slot::kDown), d, f);
  return w;
}

}  // namespace

std::string EmbeddingName(NameScheme scheme) {
  return scheme == NameScheme::kHuggingFace ? "model.embed_tokens.weight" : "token_embd.weight";
}

std::string LmHeadName(NameScheme scheme) {
  return scheme == NameScheme::kHuggingFace ? "lm_head.weight" : "output.weight";
}

std::vector<std::string> MatMulWeightNames(const ModelConfig& c, NameScheme scheme) {
  std::vector<std::string> out;
  for (int64_t l = 0; l < c.num_layers; ++l) {
    for (Slot s : {Slot::kQ, Slot::kK, Slot::kV, Slot::kO, Slot::kGate, Slot::kUp, Slot::kDown}) {
      out.push_back(LayerTensorName(scheme, l, s));
    }
  }
  out.push_back(LmHeadName(scheme));
  return out;
}

ModelWeights BindWeights(const WeightSource& source, const ModelConfig& c, NameScheme scheme) {
  TensorBinder b(source);
  const bool hf = scheme == NameScheme::kHuggingFace;
  ModelWeights w;
  w.embed = b.Matrix(EmbeddingName(scheme), c.vocab_size, c.hidden_size);
  KILN_CHECK(w.embed.data != nullptr, source.Describe(),
             ": the embedding must be stored as it is (its rows are looked up)");
  for (int64_t l = 0; l < c.num_layers; ++l) w.layers.push_back(BindLayer(b, c, scheme, l));
  w.final_norm = b.Vector(hf ? "model.norm.weight" : "output_norm.weight", c.hidden_size);
  const std::string head = LmHeadName(scheme);
  if (c.tie_word_embeddings && source.Find(head) == nullptr) {
    w.lm_head = w.embed;
  } else {
    w.lm_head = b.Matrix(head, c.vocab_size, c.hidden_size);
  }
  if (!hf && source.Find("rope_freqs.weight") != nullptr) {
    w.rope_freq_factors = b.Vector("rope_freqs.weight", c.head_dim / 2);
  }
  return w;
}

}  // namespace kiln
