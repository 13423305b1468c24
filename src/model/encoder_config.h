// Hyper-parameters of a BERT-style encoder (BERT, RoBERTa, XLM-RoBERTa and the sentence
// embedders built on them) from a Hugging Face folder: config.json, plus sentence-transformers'
// modules.json / 1_Pooling/config.json / sentence_bert_config.json when present (the pooling
// and length the model was trained with). Validated so the forward pass can trust them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kernels/ops.h"

namespace kiln {

struct HfConfig;

enum class EncoderArch { kBert, kRoberta };
// The task head on top of the encoder, from config.json's "architectures".
enum class EncoderHead { kNone, kSequenceClassification, kQuestionAnswering };
// How a sequence's hidden states become one embedding (TEI's --pooling names).
enum class Pooling { kCls, kMean, kLastToken };

struct EncoderConfig {
  EncoderArch arch = EncoderArch::kBert;
  EncoderHead head = EncoderHead::kNone;
  std::string arch_name;  // "BertModel", "XLMRobertaForSequenceClassification", ...
  int64_t vocab_size = 0;
  int64_t hidden_size = 0;        // D
  int64_t intermediate_size = 0;  // F
  int64_t num_layers = 0;
  int64_t num_heads = 0;  // H
  int64_t head_dim = 0;   // hd = D / H
  int64_t max_position_embeddings = 512;
  int64_t type_vocab_size = 2;
  double layer_norm_eps = 1e-12;
  kernels::GeluStyle activation = kernels::GeluStyle::kErf;
  int64_t pad_token_id = 0;
  // RoBERTa numbers positions from pad_token_id + 1 (its padding position is never used).
  int64_t position_offset = 0;
  // Sequence classification: the labels in id order (config.json's id2label, else LABEL_i).
  std::vector<std::string> labels;
  Pooling pooling = Pooling::kCls;
  bool pooling_from_file = false;  // pooling came from 1_Pooling/config.json
  bool normalize = false;          // sentence-transformers' recipe ends in a Normalize module
  // The longest input: the positions the model has, capped by sentence_bert_config.json's
  // max_seq_length.
  int64_t max_input_tokens = 512;

  void Validate(const std::string& source) const;  // kiln::Error naming `source`
};

// Whether config.json describes an encoder this layer serves (a model_type or architecture of
// the BERT family); false for decoders and anything else.
bool IsEncoderConfig(const HfConfig& hf);
// From a loaded config.json; `dir` is read for the sentence-transformers files.
EncoderConfig EncoderConfigFromHf(const HfConfig& hf);

const char* PoolingName(Pooling p);
// "cls", "mean", "last-token" (TEI's names); kiln::Error otherwise.
Pooling ParsePooling(const std::string& name);

}  // namespace kiln
