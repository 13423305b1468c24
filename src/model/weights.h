// Binds the tensors of a checkpoint (HF safetensors names or GGUF names) to the slots of the
// Llama-family forward pass, checking every shape against the config. Matrices stay in the
// mapped file in their stored dtype; small vectors (norms, biases) are converted to f32.
#pragma once

#include <string>
#include <vector>

#include "formats/tensor.h"
#include "kernels/ops.h"
#include "model/config.h"

namespace kiln {

enum class NameScheme { kHuggingFace, kGguf };

struct LayerWeights {
  std::vector<float> attn_norm;               // [D]
  kernels::Matrix wq, wk, wv, wo;             // [H*hd, D], [KV*hd, D], [KV*hd, D], [D, H*hd]
  std::vector<float> q_bias, k_bias, v_bias;  // [H*hd], [KV*hd], [KV*hd] (attention_bias)
  std::vector<float> q_norm, k_norm;          // [hd] (qk_norm)
  std::vector<float> ffn_norm;                // [D]
  kernels::Matrix w_gate, w_up, w_down;       // [F, D], [F, D], [D, F]
};

struct ModelWeights {
  kernels::Matrix embed;  // [V, D]
  std::vector<LayerWeights> layers;
  std::vector<float> final_norm;         // [D]
  kernels::Matrix lm_head;               // [V, D] (the embedding when tied)
  std::vector<float> rope_freq_factors;  // [hd/2] GGUF rope_freqs.weight, empty when absent
};

// Tensors of a source that carry TensorView::packed (a Kiln artifact's) are bound with
// Matrix::packed set and no `data`; their panels must have the size this CPU's kernels read
// (kernels::PackedMatrixBytes), else kiln::Error.
ModelWeights BindWeights(const WeightSource& source, const ModelConfig& config, NameScheme scheme);

// Names of the matrices the forward pass multiplies by: every layer's seven projections, in
// layer order, then the LM head (named even when the source only has the tied embedding).
std::vector<std::string> MatMulWeightNames(const ModelConfig& config, NameScheme scheme);
std::string EmbeddingName(NameScheme scheme);
std::string LmHeadName(NameScheme scheme);

}  // namespace kiln
