// Incremental detokenizer of one sequence: the text each generated token adds, in complete UTF-8
// characters only (a character split over several byte tokens is released with its last byte),
// so every event's text is valid UTF-8 and the events concatenate to the decoded output.
//
// Text of a token: special tokens (control, user-defined, unknown) give nothing when
// skip_special_tokens, else their vocabulary text ("<|im_end|>"); other tokens give their
// TokenPiece bytes (leading spaces kept, as they continue the prompt). Ids the tokenizer does not
// know (padded model vocabularies) give no text.
#pragma once

#include <cstdint>
#include <string>

#include "util/utf8.h"

namespace kiln {

class Tokenizer;

class Detokenizer {
 public:
  // `tokenizer` may be null: no text at all.
  Detokenizer(const Tokenizer* tokenizer, bool skip_special);

  void Push(int32_t id, std::string& out);  // appends the complete characters now available
  void Flush(std::string& out);             // end: what is left, invalid bytes as U+FFFD

  // The text of `id` on its own (valid UTF-8), for top-n alternatives.
  static std::string StandaloneText(const Tokenizer& tokenizer, int32_t id);
  // Whether `tokenizer` marks `id` special; false for ids past its vocabulary (models often pad
  // their embedding rows beyond the tokenizer's, e.g. Qwen2's 151936 vs 151665).
  static bool IsSpecial(const Tokenizer* tokenizer, int32_t id);

 private:
  const Tokenizer* tokenizer_;
  bool skip_special_;
  Utf8StreamBuffer buffer_;
};

}  // namespace kiln
