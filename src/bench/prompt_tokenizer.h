// The tokenizer the data generator sizes prompts with: the model's own (a GGUF vocabulary via
// kiln::Tokenizer) or, without one, whitespace-separated words as an approximation.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace kiln::bench {

class PromptTokenizer {
 public:
  virtual ~PromptTokenizer() = default;
  // Token ids of `text` without special tokens.
  virtual std::vector<int32_t> Encode(std::string_view text) const = 0;
  virtual std::string Decode(const std::vector<int32_t>& ids) const = 0;
  // Tokens the server counts for `text` as a prompt: Encode plus the special tokens the
  // vocabulary adds (BOS), as a server's usage.prompt_tokens reports for /v1/completions.
  virtual int64_t CountPromptTokens(std::string_view text) const = 0;
  // True when counts are the model's own; false for the word approximation.
  virtual bool exact() const = 0;
  virtual std::string description() const = 0;
};

// Words as tokens: good to a few percent for the common English words the generator uses.
std::unique_ptr<PromptTokenizer> MakeWordTokenizer();

// The model's tokenizer from the vocabulary in a GGUF file. Throws kiln::Error.
std::unique_ptr<PromptTokenizer> LoadGgufTokenizer(const std::string& gguf_path);

}  // namespace kiln::bench
