#include "tokenizer/hf/tokenizer_config.h"

#include "tokenizer/hf/json_fields.h"
#include "util/error.h"

namespace kiln::hf {
namespace {

std::optional<std::string> TokenName(const Json& j, std::string_view key,
                                     const std::string& where) {
  const Json* f = OptField(j, key);
  if (f == nullptr) return std::nullopt;
  if (f->is_object()) return GetString(*f, "content", FieldPath(where, key));
  return AsString(*f, FieldPath(where, key));
}

std::string ChatTemplate(const Json& j, const std::string& where) {
  const Json* f = OptField(j, "chat_template");
  if (f == nullptr) return {};
  const std::string at = FieldPath(where, "chat_template");
  if (f->is_string()) return f->get<std::string>();
  KILN_CHECK(f->is_array(), at, ": expected a string or a list of {name, template}");
  std::string first;
  for (size_t i = 0; i < f->size(); ++i) {
    const std::string item = StrCat(at, "[", i, "]");
    const std::string name = GetString((*f)[i], "name", item);
    std::string text = GetString((*f)[i], "template", item);
    if (name == "default") return text;
    if (i == 0) first = std::move(text);
  }
  return first;
}

std::optional<bool> OptionalBool(const Json& j, std::string_view key, const std::string& where) {
  if (OptField(j, key) == nullptr) return std::nullopt;
  return OptBool(j, key, where, false);
}

}  // namespace

TokenizerConfig ParseTokenizerConfig(std::string_view json, const std::string& source) {
  const Json j = ParseJson(json, source);
  CheckObject(j, source);
  TokenizerConfig c;
  c.bos_token = TokenName(j, "bos_token", source);
  c.eos_token = TokenName(j, "eos_token", source);
  c.unk_token = TokenName(j, "unk_token", source);
  c.pad_token = TokenName(j, "pad_token", source);
  c.add_bos_token = OptionalBool(j, "add_bos_token", source);
  c.add_eos_token = OptionalBool(j, "add_eos_token", source);
  c.tokenizer_class = OptString(j, "tokenizer_class", source).value_or("");
  c.clean_up_tokenization_spaces = OptBool(j, "clean_up_tokenization_spaces", source, false);
  c.chat_template = ChatTemplate(j, source);
  return c;
}

}  // namespace kiln::hf
