// tokenizer_config.json, the transformers side of a Hugging Face tokenizer: special-token
// names, whether BOS/EOS are added, the decode clean-up flag and the chat template.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace kiln::hf {

struct TokenizerConfig {
  // Token texts; a {"content": ...} object (a serialized AddedToken) gives its content.
  std::optional<std::string> bos_token, eos_token, unk_token, pad_token;
  std::optional<bool> add_bos_token, add_eos_token;
  std::string tokenizer_class;  // "LlamaTokenizerFast", ...; "" when absent
  bool clean_up_tokenization_spaces = false;
  std::string chat_template;  // "" when none; of a list, the one named "default" (else the first)
};

// Throws kiln::Error naming `source` when the JSON or a field is malformed.
TokenizerConfig ParseTokenizerConfig(std::string_view json, const std::string& source);

}  // namespace kiln::hf
