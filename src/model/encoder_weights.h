// Binds a BERT-style checkpoint's tensors (transformers' names, with or without the "bert." /
// "roberta." prefix a task model adds) to the encoder's slots, checking every shape against
// the config.
#pragma once

#include <vector>

#include "formats/tensor.h"
#include "kernels/ops.h"
#include "model/encoder_config.h"

namespace kiln {

struct EncoderLayerWeights {
  kernels::Matrix wq, wk, wv, wo;             // [D, D] each
  std::vector<float> bq, bk, bv, bo;          // [D]
  std::vector<float> attn_norm, attn_norm_b;  // [D]: LayerNorm after attention + residual
  kernels::Matrix w_in, w_out;                // [F, D], [D, F]
  std::vector<float> b_in, b_out;             // [F], [D]
  std::vector<float> ffn_norm, ffn_norm_b;    // [D]: LayerNorm after the MLP + residual
};

struct EncoderWeights {
  kernels::Matrix word, position, token_type;   // [V, D], [P, D], [type_vocab, D] (row lookups)
  std::vector<float> embed_norm, embed_norm_b;  // [D]
  std::vector<EncoderLayerWeights> layers;
  // BERT sequence classification: tanh(pooler · h[CLS] + b), then the classifier.
  kernels::Matrix pooler;       // [D, D] (empty: none)
  std::vector<float> pooler_b;  // [D]
  // RoBERTa's classification head: classifier.dense + tanh, then classifier.out_proj.
  kernels::Matrix cls_dense;        // [D, D] (empty: none)
  std::vector<float> cls_dense_b;   // [D]
  kernels::Matrix classifier;       // [L, D]
  std::vector<float> classifier_b;  // [L]
  kernels::Matrix qa;               // [2, D]: start and end logits per token
  std::vector<float> qa_b;          // [2]
};

EncoderWeights BindEncoderWeights(const WeightSource& source, const EncoderConfig& config);

// Every matrix the forward pass multiplies by (what the kernels may repack).
std::vector<kernels::Matrix*> EncoderMatMulWeights(EncoderWeights& w);

}  // namespace kiln
