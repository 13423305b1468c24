// tokenizer.json "added_tokens": matched in the text before the model runs, as the HF
// tokenizers library's AddedVocabulary does: leftmost-longest matches, first among the tokens
// with normalized = false on the raw text, then among those with normalized = true on each
// normalized stretch; single_word, lstrip and rstrip as there.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/hf/json_fields.h"

namespace kiln::hf {

class Normalizer;

struct AddedToken {
  std::string content;
  int32_t id = -1;
  bool special = false;
  bool lstrip = false;
  bool rstrip = false;
  bool normalized = true;
  bool single_word = false;
};

// Reads the array; ids checked against [0, max_id]. Throws kiln::Error naming `where`.
std::vector<AddedToken> ReadAddedTokens(const Json& j, const std::string& where, int64_t max_id);

// A stretch of text [start, end): an added token (id >= 0) or text to tokenize (id = -1).
struct Segment {
  size_t start;
  size_t end;
  int32_t id;
};

class AddedTokenMatcher {
 public:
  AddedTokenMatcher() = default;
  // `patterns`: the tokens of one set, with the text to look for (normalized for that set).
  AddedTokenMatcher(const std::vector<AddedToken>& tokens,
                    const std::vector<std::string>& patterns);

  // Splits `text`; special tokens are not matched when skip_special (encode_special_tokens).
  void Split(std::string_view text, bool skip_special, std::vector<Segment>* out) const;
  bool empty() const { return patterns_.empty(); }

 private:
  struct Pattern {
    std::string text;
    AddedToken token;
  };
  // Longest pattern matching at `pos`, or -1.
  int Longest(std::string_view text, size_t pos) const;

  std::vector<Pattern> patterns_;
  std::array<std::vector<int>, 256> by_first_byte_;  // pattern indexes, longest first
};

}  // namespace kiln::hf
