#include "model/encoder_config.h"

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "formats/hf_config.h"
#include "util/error.h"

namespace kiln {
namespace {

constexpr int64_t kMaxDim = int64_t{1} << 20;  // any single dimension above this is corrupt

std::string ArchName(const HfConfig& hf) {
  auto it = hf.config.find("architectures");
  if (it != hf.config.end() && it->is_array() && !it->empty() && (*it)[0].is_string()) {
    return (*it)[0].get<std::string>();
  }
  return hf.GetString("model_type").value_or("");
}

bool EndsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// The family from model_type, else from the architecture's prefix.
std::optional<EncoderArch> ArchFamily(const HfConfig& hf) {
  const std::string type = hf.GetString("model_type").value_or("");
  const std::string name = ArchName(hf);
  if (type == "bert" || name.rfind("Bert", 0) == 0) return EncoderArch::kBert;
  if (type == "roberta" || type == "xlm-roberta" || type == "camembert" ||
      name.rfind("Roberta", 0) == 0 || name.rfind("XLMRoberta", 0) == 0 ||
      name.rfind("Camembert", 0) == 0) {
    return EncoderArch::kRoberta;
  }
  return std::nullopt;
}

// A JSON file of the folder, or null when absent; kiln::Error when present but not JSON.
nlohmann::json ReadOptionalJson(const std::filesystem::path& path) {
  std::ifstream in(path);
  if (!in) return nullptr;
  std::stringstream text;
  text << in.rdbuf();
  nlohmann::json j = nlohmann::json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
  KILN_CHECK(!j.is_discarded() && j.is_object(), path.string(), ": not a JSON object");
  return j;
}

// sentence-transformers' modules.json lists the pipeline (Transformer, Pooling, Normalize);
// the Pooling module's folder holds its config.
void ReadSentenceTransformers(const std::string& dir, EncoderConfig& c) {
  namespace fs = std::filesystem;
  std::ifstream modules_in(fs::path(dir) / "modules.json");
  if (modules_in) {
    std::stringstream text;
    text << modules_in.rdbuf();
    const nlohmann::json modules = nlohmann::json::parse(text.str(), nullptr, false);
    KILN_CHECK(!modules.is_discarded() && modules.is_array(), dir,
               "/modules.json: not a JSON array");
    for (const nlohmann::json& m : modules) {
      if (!m.is_object()) continue;
      const std::string type = m.value("type", "");
      const std::string path = m.value("path", "");
      if (EndsWith(type, "Normalize")) c.normalize = true;
      if (!EndsWith(type, "Pooling")) continue;
      const nlohmann::json pool = ReadOptionalJson(fs::path(dir) / path / "config.json");
      if (!pool.is_object()) continue;
      auto on = [&](const char* key) { return pool.value(key, false) == true; };
      if (on("pooling_mode_cls_token")) {
        c.pooling = Pooling::kCls;
      } else if (on("pooling_mode_mean_tokens")) {
        c.pooling = Pooling::kMean;
      } else if (on("pooling_mode_lasttoken")) {
        c.pooling = Pooling::kLastToken;
      } else {
        throw Error(StrCat(dir, "/", path,
                           "/config.json: unsupported pooling (cls, mean or "
                           "last token)"));
      }
      c.pooling_from_file = true;
    }
  }
  const nlohmann::json sbert = ReadOptionalJson(fs::path(dir) / "sentence_bert_config.json");
  if (sbert.is_object() && sbert.contains("max_seq_length") &&
      sbert["max_seq_length"].is_number_integer()) {
    c.max_input_tokens = std::min(c.max_input_tokens, sbert["max_seq_length"].get<int64_t>());
  }
}

kernels::GeluStyle Activation(const HfConfig& hf) {
  const std::string act = hf.GetString("hidden_act").value_or("gelu");
  if (act == "gelu") return kernels::GeluStyle::kErf;
  if (act == "gelu_new" || act == "gelu_pytorch_tanh") return kernels::GeluStyle::kTanh;
  throw Error(StrCat(hf.dir, "/config.json: unsupported hidden_act '", act,
                     "' (gelu, gelu_new, gelu_pytorch_tanh)"));
}

std::vector<std::string> Labels(const HfConfig& hf, int64_t num_labels) {
  std::vector<std::string> labels(num_labels);
  for (int64_t i = 0; i < num_labels; ++i) labels[i] = "LABEL_" + std::to_string(i);
  auto it = hf.config.find("id2label");
  if (it == hf.config.end() || !it->is_object()) return labels;
  for (auto& [key, value] : it->items()) {
    char* end = nullptr;
    const long id = std::strtol(key.c_str(), &end, 10);
    if (end == key.c_str() || *end != '\0' || id < 0 || id >= num_labels || !value.is_string()) {
      throw Error(StrCat(hf.dir, "/config.json: id2label entry '", key,
                         "' is not a label id "
                         "below num_labels (",
                         num_labels, ")"));
    }
    labels[id] = value.get<std::string>();
  }
  return labels;
}

}  // namespace

bool IsEncoderConfig(const HfConfig& hf) { return ArchFamily(hf).has_value(); }

EncoderConfig EncoderConfigFromHf(const HfConfig& hf) {
  EncoderConfig c;
  const std::optional<EncoderArch> family = ArchFamily(hf);
  c.arch_name = ArchName(hf);
  KILN_CHECK(family.has_value(), hf.dir, "/config.json: '", c.arch_name,
             "' is not a BERT-family encoder");
  c.arch = *family;
  if (EndsWith(c.arch_name, "ForSequenceClassification")) {
    c.head = EncoderHead::kSequenceClassification;
  } else if (EndsWith(c.arch_name, "ForQuestionAnswering")) {
    c.head = EncoderHead::kQuestionAnswering;
  } else if (EndsWith(c.arch_name, "ForMaskedLM") || EndsWith(c.arch_name, "Model") ||
             c.arch_name == hf.GetString("model_type").value_or("")) {
    c.head = EncoderHead::kNone;  // the encoder's hidden states (the LM head is not served)
  } else {
    throw Error(StrCat(hf.dir, "/config.json: unsupported encoder architecture '", c.arch_name,
                       "' (*Model, *ForMaskedLM, *ForSequenceClassification, "
                       "*ForQuestionAnswering of BERT, RoBERTa, XLM-RoBERTa)"));
  }
  auto need = [&](const char* key) {
    auto v = hf.GetInt(key);
    KILN_CHECK(v.has_value(), hf.dir, "/config.json: missing '", key, "'");
    return *v;
  };
  c.vocab_size = need("vocab_size");
  c.hidden_size = need("hidden_size");
  c.intermediate_size = need("intermediate_size");
  c.num_layers = need("num_hidden_layers");
  c.num_heads = need("num_attention_heads");
  c.head_dim = c.num_heads > 0 ? c.hidden_size / c.num_heads : 0;
  c.max_position_embeddings = hf.GetInt("max_position_embeddings").value_or(512);
  c.type_vocab_size = hf.GetInt("type_vocab_size").value_or(2);
  c.layer_norm_eps = hf.GetFloat("layer_norm_eps").value_or(1e-12);
  c.activation = Activation(hf);
  c.pad_token_id = hf.GetInt("pad_token_id").value_or(c.arch == EncoderArch::kRoberta ? 1 : 0);
  c.position_offset = c.arch == EncoderArch::kRoberta ? c.pad_token_id + 1 : 0;
  const std::string pos_type = hf.GetString("position_embedding_type").value_or("absolute");
  KILN_CHECK(pos_type == "absolute", hf.dir, "/config.json: position_embedding_type '", pos_type,
             "' is not supported (absolute)");
  if (c.head == EncoderHead::kSequenceClassification) {
    int64_t n = hf.GetInt("num_labels").value_or(0);
    auto it = hf.config.find("id2label");
    if (n == 0 && it != hf.config.end() && it->is_object()) n = static_cast<int64_t>(it->size());
    c.labels = Labels(hf, n == 0 ? 2 : n);
  }
  c.max_input_tokens = c.max_position_embeddings - c.position_offset;
  // Without sentence-transformers' files, BERT's own pooling: the [CLS] token.
  c.pooling = Pooling::kCls;
  ReadSentenceTransformers(hf.dir, c);
  c.Validate(hf.dir + "/config.json");
  return c;
}

void EncoderConfig::Validate(const std::string& source) const {
  auto dim = [&](const char* name, int64_t v) {
    KILN_CHECK(v > 0 && v <= kMaxDim, source, ": ", name, " = ", v, " is out of range");
  };
  dim("vocab_size", vocab_size);
  dim("hidden_size", hidden_size);
  dim("intermediate_size", intermediate_size);
  dim("num_hidden_layers", num_layers);
  dim("num_attention_heads", num_heads);
  dim("max_position_embeddings", max_position_embeddings);
  dim("type_vocab_size", type_vocab_size);
  KILN_CHECK(hidden_size % num_heads == 0, source, ": hidden_size ", hidden_size,
             " is not a multiple of num_attention_heads ", num_heads);
  KILN_CHECK(num_layers <= 1024, source, ": num_hidden_layers = ", num_layers, " is too many");
  KILN_CHECK(max_input_tokens > 0, source, ": no position is left for tokens (",
             max_position_embeddings, " positions, offset ", position_offset, ")");
  KILN_CHECK(pad_token_id >= 0 && pad_token_id < vocab_size, source, ": pad_token_id ",
             pad_token_id, " is outside the vocabulary");
  KILN_CHECK(layer_norm_eps >= 0 && layer_norm_eps < 1, source, ": layer_norm_eps out of range");
  KILN_CHECK(labels.size() <= 1 << 16, source, ": too many labels");
}

const char* PoolingName(Pooling p) {
  switch (p) {
    case Pooling::kCls:
      return "cls";
    case Pooling::kMean:
      return "mean";
    case Pooling::kLastToken:
      return "last-token";
  }
  return "?";
}

Pooling ParsePooling(const std::string& name) {
  if (name == "cls") return Pooling::kCls;
  if (name == "mean") return Pooling::kMean;
  if (name == "last-token" || name == "lasttoken") return Pooling::kLastToken;
  throw Error(StrCat("unknown pooling '", name, "' (cls, mean, last-token)"));
}

}  // namespace kiln
