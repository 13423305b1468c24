#include "model/weights.h"

#include "formats/kiln_artifact.h"
#include "kernels/ops.h"
#include "util/error.h"

namespace kiln {
namespace {

enum class Slot { kAttnNorm, kQ, kK, kV, kO, kQBias, kKBias, kVBias, kQNorm, kKNorm, kFfnNorm,
                  kGate, kUp, kDown };

std::string LayerTensorName(NameScheme scheme, int64_t layer, Slot slot) {
  static const char* const kHf[] = {
      "input_layernorm.weight",   "self_attn.q_proj.weight",  "self_attn.k_proj.weight",
      "self_attn.v_proj.weight",  "self_attn.o_proj.weight",  "self_attn.q_proj.bias",
      "self_attn.k_proj.bias",    "self_attn.v_proj.bias",    "self_attn.q_norm.weight",
      "self_attn.k_norm.weight",  "post_attention_layernorm.weight", "mlp.gate_proj.weight",
      "mlp.up_proj.weight",       "mlp.down_proj.weight"};
  static const char* const kGguf[] = {
      "attn_norm.weight", "attn_q.weight",      "attn_k.weight",      "attn_v.weight",
      "attn_output.weight", "attn_q.bias",      "attn_k.bias",        "attn_v.bias",
      "attn_q_norm.weight", "attn_k_norm.weight", "ffn_norm.weight",  "ffn_gate.weight",
      "ffn_up.weight",    "ffn_down.weight"};
  const int i = static_cast<int>(slot);
  if (scheme == NameScheme::kHuggingFace) {
    return "model.layers." + std::to_string(layer) + "." + kHf[i];
  }
  return "blk." + std::to_string(layer) + "." + kGguf[i];
}

class Binder {
 public:
  Binder(const WeightSource& source) : source_(source) {}

  const TensorView& Require(const std::string& name) const {
    const TensorView* t = source_.Find(name);
    KILN_CHECK(t != nullptr, source_.Describe(), ": missing tensor '", name, "'");
    return *t;
  }

  kernels::Matrix Matrix(const std::string& name, int64_t rows, int64_t cols) const {
    const TensorView& t = Require(name);
    KILN_CHECK(t.shape.size() == 2 && t.shape[0] == rows && t.shape[1] == cols,
               source_.Describe(), ": tensor '", name, "' has shape ", ShapeText(t.shape),
               ", expected [", rows, ", ", cols, "]");
    auto row_bytes = BytesForElements(t.dtype, static_cast<uint64_t>(cols));
    KILN_CHECK(row_bytes.has_value() && *row_bytes * rows == t.nbytes, source_.Describe(),
               ": tensor '", name, "' size does not match its shape and dtype");
    kernels::Matrix m{t.dtype, rows, cols, t.data, *row_bytes, t.packed};
    if (t.packed != nullptr) {
      const uint64_t want = kernels::PackedMatrixBytes(m);
      // An ArtifactError: the model cache then exports the entry again for this build.
      if (want != t.packed_bytes) {
        throw ArtifactError(StrCat(source_.Describe(), ": tensor '", name, "' is packed in ",
                                   t.packed_bytes, " bytes for another kernel layout (this "
                                   "CPU's kernels read ", want, "); export the model again"));
      }
    }
    return m;
  }

  std::vector<float> Vector(const std::string& name, int64_t n) const {
    const TensorView& t = Require(name);
    KILN_CHECK(t.NumElements() == n && t.shape.size() == 1, source_.Describe(), ": tensor '",
               name, "' has shape ", ShapeText(t.shape), ", expected [", n, "]");
    KILN_CHECK(t.data != nullptr, source_.Describe(), ": tensor '", name,
               "' is stored packed; vectors must be stored as they are");
    kernels::Matrix row = Matrix1(t, n);
    std::vector<float> out(n);
    kernels::DequantizeRow(row, 0, out.data());
    return out;
  }

 private:
  kernels::Matrix Matrix1(const TensorView& t, int64_t n) const {
    auto bytes = BytesForElements(t.dtype, static_cast<uint64_t>(n));
    KILN_CHECK(bytes.has_value() && *bytes == t.nbytes, source_.Describe(), ": tensor '",
               t.name, "' size does not match its shape and dtype");
    return kernels::Matrix{t.dtype, 1, n, t.data, *bytes};
  }

  static std::string ShapeText(const std::vector<int64_t>& shape) {
    std::string s = "[";
    for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
    return s + "]";
  }

  const WeightSource& source_;
};

LayerWeights BindLayer(const Binder& b, const ModelConfig& c, NameScheme scheme, int64_t layer) {
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
  Binder b(source);
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
