// Tokenizer::FromGguf: tokenizer.ggml.* metadata -> VocabSpec.
#include "formats/gguf.h"
#include "tokenizer/tokenizer.h"
#include "util/error.h"

namespace kiln {

std::unique_ptr<Tokenizer> Tokenizer::FromGguf(const GgufFile& gguf) {
  VocabSpec spec;
  spec.source = gguf.Describe();
  const std::string kPrefix = "tokenizer.ggml.";

  auto model = gguf.GetString(kPrefix + "model");
  KILN_CHECK(model.has_value(), spec.source, ": no tokenizer.ggml.model (no vocabulary)");
  spec.model = *model;
  KILN_CHECK(spec.model != "none" && spec.model != "no_vocab", spec.source,
             ": the file has no vocabulary (tokenizer.ggml.model = ", spec.model, ")");
  spec.pre = gguf.GetString(kPrefix + "pre").value_or("");

  auto tokens = gguf.GetStringArray(kPrefix + "tokens");
  KILN_CHECK(tokens.has_value(), spec.source, ": no tokenizer.ggml.tokens");
  spec.tokens = std::move(*tokens);
  if (auto scores = gguf.GetFloatArray(kPrefix + "scores")) {
    spec.scores.assign(scores->begin(), scores->end());
  }
  if (auto types = gguf.GetIntArray(kPrefix + "token_type")) {
    spec.token_types.reserve(types->size());
    for (int64_t t : *types) spec.token_types.push_back(static_cast<int32_t>(t));
  }
  if (spec.model == "gpt2") {
    auto merges = gguf.GetStringArray(kPrefix + "merges");
    KILN_CHECK(merges.has_value(), spec.source, ": gpt2 tokenizer without tokenizer.ggml.merges");
    spec.merges = std::move(*merges);
  }

  auto id = [&](const char* key) { return gguf.GetInt(kPrefix + key); };
  spec.bos_id = id("bos_token_id");
  spec.eos_id = id("eos_token_id");
  spec.eot_id = id("eot_token_id");
  spec.eom_id = id("eom_token_id");
  spec.unk_id = id("unknown_token_id");
  spec.pad_id = id("padding_token_id");
  spec.fim_pre_id = id("fim_pre_token_id");
  spec.fim_suf_id = id("fim_suf_token_id");
  spec.fim_mid_id = id("fim_mid_token_id");
  spec.fim_pad_id = id("fim_pad_token_id");
  spec.fim_rep_id = id("fim_rep_token_id");
  spec.fim_sep_id = id("fim_sep_token_id");
  // Older names; llama.cpp reads them after the fim_* keys, so they win when valid.
  const int64_t n = static_cast<int64_t>(spec.tokens.size());
  auto older = [&](const char* key, std::optional<int64_t>* slot) {
    if (auto v = id(key); v && *v >= 0 && *v < n) *slot = v;
  };
  older("prefix_token_id", &spec.fim_pre_id);
  older("suffix_token_id", &spec.fim_suf_id);
  older("middle_token_id", &spec.fim_mid_id);

  spec.add_bos = gguf.GetBool(kPrefix + "add_bos_token");
  spec.add_eos = gguf.GetBool(kPrefix + "add_eos_token");
  spec.add_space_prefix = gguf.GetBool(kPrefix + "add_space_prefix");
  spec.general_name = gguf.GetString("general.name").value_or("");
  spec.architecture = gguf.GetString("general.architecture").value_or("");
  return FromVocab(spec);
}

}  // namespace kiln
