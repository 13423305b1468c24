// EncodeWords' bookkeeping while the tokenizer.json pipeline runs. As in HF's
// PreTokenizedString::into_encoding, every split (a matched added token, or a piece the
// pre-tokenizer left) is one word, whether or not the model gives it tokens; a token's offsets
// are the original range of its bytes of the split, and the post-processor's trim_offsets
// passes may then shrink them. A word's span runs from its first token's start to its last
// token's end (HF's word_to_chars).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/hf/alignment.h"
#include "tokenizer/hf/split.h"
#include "tokenizer/tokenizer.h"

namespace kiln::hf {

class WordRecorder {
 public:
  // `text`: the (repaired, valid UTF-8) text being encoded. `token_text`: every id's string
  // (HF's token value, which the trimming looks at). `trim_passes`: PostProcessor's.
  WordRecorder(std::string_view text, const std::vector<std::string>& token_text,
               const std::vector<bool>& trim_passes)
      : text_(text), token_text_(token_text), trim_passes_(trim_passes) {}

  // An added token matched on `matched` (lstrip/rstrip whitespace included), from `range`.
  void AddAddedToken(int32_t id, Align range, std::string_view matched);
  // ids[first..] are what the model gave for `piece`; `fallback` is the range to use when the
  // piece lost its alignment.
  void AddPiece(const Piece& piece, const std::vector<int32_t>& ids, size_t first, Align fallback);
  // The spans, mapped back to `input` when the text was repaired from it.
  std::vector<WordSpan> Finish(std::string_view input) const;

 private:
  struct Token {
    int32_t id;
    int32_t word;
    uint32_t begin, end;
    uint32_t leading, trailing;  // whitespace characters at the ends of the token's value
  };
  void Add(int32_t id, Align range, std::string_view value);
  void Trim(bool add_prefix_space, std::vector<Token>* tokens) const;

  std::string_view text_;
  const std::vector<std::string>& token_text_;
  const std::vector<bool>& trim_passes_;
  std::vector<Token> tokens_;
  int32_t word_ = 0;
};

}  // namespace kiln::hf
