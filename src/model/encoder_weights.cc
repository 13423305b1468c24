#include "model/encoder_weights.h"

#include "model/tensor_binder.h"
#include "util/error.h"

namespace kiln {
namespace {

// The prefix a task model puts before the encoder's own tensors ("bert.", "roberta.", ...).
std::string EncoderPrefix(const TensorBinder& b) {
  for (const char* p : {"", "bert.", "roberta.", "model.", "encoder."}) {
    if (b.Has(std::string(p) + "embeddings.word_embeddings.weight")) return p;
  }
  throw Error(StrCat(b.source().Describe(),
                     ": no 'embeddings.word_embeddings.weight' (with or "
                     "without a bert. / roberta. prefix)"));
}

// LayerNorm parameters: "weight"/"bias", or the "gamma"/"beta" of older BERT checkpoints.
void BindNorm(const TensorBinder& b, const std::string& base, int64_t d, std::vector<float>* w,
              std::vector<float>* bias) {
  const bool old = !b.Has(base + ".weight") && b.Has(base + ".gamma");
  *w = b.Vector(base + (old ? ".gamma" : ".weight"), d);
  *bias = b.Vector(base + (old ? ".beta" : ".bias"), d);
}

EncoderLayerWeights BindLayer(const TensorBinder& b, const std::string& base,
                              const EncoderConfig& c) {
  const int64_t d = c.hidden_size, f = c.intermediate_size;
  EncoderLayerWeights w;
  w.wq = b.Matrix(base + "attention.self.query.weight", d, d);
  w.bq = b.Vector(base + "attention.self.query.bias", d);
  w.wk = b.Matrix(base + "attention.self.key.weight", d, d);
  w.bk = b.Vector(base + "attention.self.key.bias", d);
  w.wv = b.Matrix(base + "attention.self.value.weight", d, d);
  w.bv = b.Vector(base + "attention.self.value.bias", d);
  w.wo = b.Matrix(base + "attention.output.dense.weight", d, d);
  w.bo = b.Vector(base + "attention.output.dense.bias", d);
  BindNorm(b, base + "attention.output.LayerNorm", d, &w.attn_norm, &w.attn_norm_b);
  w.w_in = b.Matrix(base + "intermediate.dense.weight", f, d);
  w.b_in = b.Vector(base + "intermediate.dense.bias", f);
  w.w_out = b.Matrix(base + "output.dense.weight", d, f);
  w.b_out = b.Vector(base + "output.dense.bias", d);
  BindNorm(b, base + "output.LayerNorm", d, &w.ffn_norm, &w.ffn_norm_b);
  return w;
}

void BindHead(const TensorBinder& b, const std::string& prefix, const EncoderConfig& c,
              EncoderWeights& w) {
  const int64_t d = c.hidden_size;
  if (c.head == EncoderHead::kQuestionAnswering) {
    w.qa = b.Matrix("qa_outputs.weight", 2, d);
    w.qa_b = b.Vector("qa_outputs.bias", 2);
    return;
  }
  if (c.head != EncoderHead::kSequenceClassification) return;
  const int64_t labels = static_cast<int64_t>(c.labels.size());
  if (b.Has("classifier.out_proj.weight")) {  // RobertaClassificationHead
    w.cls_dense = b.Matrix("classifier.dense.weight", d, d);
    w.cls_dense_b = b.Vector("classifier.dense.bias", d);
    w.classifier = b.Matrix("classifier.out_proj.weight", labels, d);
    w.classifier_b = b.Vector("classifier.out_proj.bias", labels);
    return;
  }
  w.pooler = b.Matrix(prefix + "pooler.dense.weight", d, d);
  w.pooler_b = b.Vector(prefix + "pooler.dense.bias", d);
  w.classifier = b.Matrix("classifier.weight", labels, d);
  w.classifier_b = b.Vector("classifier.bias", labels);
}

}  // namespace

EncoderWeights BindEncoderWeights(const WeightSource& source, const EncoderConfig& c) {
  const TensorBinder b(source);
  const std::string p = EncoderPrefix(b);
  const int64_t d = c.hidden_size;
  EncoderWeights w;
  w.word = b.Matrix(p + "embeddings.word_embeddings.weight", c.vocab_size, d);
  w.position = b.Matrix(p + "embeddings.position_embeddings.weight", c.max_position_embeddings, d);
  w.token_type = b.Matrix(p + "embeddings.token_type_embeddings.weight", c.type_vocab_size, d);
  for (const kernels::Matrix* m : {&w.word, &w.position, &w.token_type}) {
    KILN_CHECK(m->data != nullptr, source.Describe(),
               ": embeddings must be stored as they are (their rows are looked up)");
  }
  BindNorm(b, p + "embeddings.LayerNorm", d, &w.embed_norm, &w.embed_norm_b);
  for (int64_t l = 0; l < c.num_layers; ++l) {
    w.layers.push_back(BindLayer(b, p + "encoder.layer." + std::to_string(l) + ".", c));
  }
  BindHead(b, p, c, w);
  return w;
}

std::vector<kernels::Matrix*> EncoderMatMulWeights(EncoderWeights& w) {
  std::vector<kernels::Matrix*> out;
  for (EncoderLayerWeights& l : w.layers) {
    for (kernels::Matrix* m : {&l.wq, &l.wk, &l.wv, &l.wo, &l.w_in, &l.w_out}) out.push_back(m);
  }
  for (kernels::Matrix* m : {&w.pooler, &w.cls_dense, &w.classifier, &w.qa}) {
    if (m->rows > 0) out.push_back(m);
  }
  return out;
}

}  // namespace kiln
