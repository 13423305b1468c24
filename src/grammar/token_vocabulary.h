// The model's vocabulary as byte strings, sorted so that one walk over it finds every token a
// constraint state allows: tokens sharing a prefix share the automaton steps over it, and a
// prefix the automaton rejects skips every token that starts with it.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "grammar/lazy_dfa.h"

namespace kiln::grammar {

class TokenVocabulary {
 public:
  // `pieces[id]`: the bytes the token adds to generated text; `text[id]` false for tokens that
  // are never matched against a constraint (special and control tokens, empty pieces). The
  // mask covers `pieces.size()` ids (the model's logits row, which may be longer than the
  // tokenizer's vocabulary). `end_ids`: the tokens allowed once the constraint is complete
  // (eos, end of turn).
  TokenVocabulary(std::vector<std::string> pieces, const std::vector<bool>& text,
                  std::vector<int32_t> end_ids);

  int64_t size() const { return static_cast<int64_t>(pieces_.size()); }
  int64_t mask_words() const { return (size() + 63) / 64; }
  std::string_view piece(int32_t id) const { return pieces_[id]; }
  bool is_text(int32_t id) const { return is_text_[id] != 0; }
  const std::vector<int32_t>& end_ids() const { return end_ids_; }

  // Sets the bit of every text token whose bytes keep `dfa` alive from `state` (mask holds
  // mask_words() words, cleared by the caller). Steps `dfa` lazily, so not const on it.
  void AllowedTokens(LazyDfa& dfa, int32_t state, uint64_t* mask) const;

 private:
  std::vector<std::string> pieces_;
  std::vector<uint8_t> is_text_;
  std::vector<int32_t> end_ids_;
  std::vector<int32_t> order_;  // text tokens sorted by their bytes
  std::vector<uint32_t> lcp_;   // [i]: bytes order_[i] shares with order_[i - 1]
  size_t max_len_ = 0;
};

}  // namespace kiln::grammar
