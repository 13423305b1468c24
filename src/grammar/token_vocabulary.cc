#include "grammar/token_vocabulary.h"

#include <algorithm>

namespace kiln::grammar {

TokenVocabulary::TokenVocabulary(std::vector<std::string> pieces, const std::vector<bool>& text,
                                 std::vector<int32_t> end_ids)
    : pieces_(std::move(pieces)), is_text_(pieces_.size(), 0), end_ids_(std::move(end_ids)) {
  for (size_t i = 0; i < pieces_.size(); ++i) {
    if (i < text.size() && text[i] && !pieces_[i].empty()) {
      is_text_[i] = 1;
      order_.push_back(static_cast<int32_t>(i));
      max_len_ = std::max(max_len_, pieces_[i].size());
    }
  }
  std::sort(order_.begin(), order_.end(),
            [&](int32_t a, int32_t b) { return pieces_[a] < pieces_[b]; });
  lcp_.assign(order_.size(), 0);
  for (size_t i = 1; i < order_.size(); ++i) {
    const std::string& a = pieces_[order_[i - 1]];
    const std::string& b = pieces_[order_[i]];
    const auto mismatch = std::mismatch(a.begin(), a.end(), b.begin(), b.end());
    lcp_[i] = static_cast<uint32_t>(mismatch.first - a.begin());
  }
}

void TokenVocabulary::AllowedTokens(LazyDfa& dfa, int32_t state, uint64_t* mask) const {
  // states[k]: the DFA state after the first k bytes of the current token; valid for k <=
  // `valid` (the part of the current prefix already walked).
  std::vector<int32_t> states(max_len_ + 1);
  states[0] = state;
  size_t valid = 0;
  const size_t n = order_.size();
  size_t i = 0;
  while (i < n) {
    const std::string& p = pieces_[order_[i]];
    size_t k = std::min<size_t>(lcp_[i], valid);
    for (; k < p.size(); ++k) {
      const int32_t next = dfa.Step(states[k], static_cast<uint8_t>(p[k]));
      if (next == LazyDfa::kDead) break;
      states[k + 1] = next;
    }
    if (k == p.size()) {
      mask[order_[i] >> 6] |= uint64_t{1} << (order_[i] & 63);
      valid = p.size();
      ++i;
      continue;
    }
    // Byte k is refused: so is every following token that shares the first k + 1 bytes.
    valid = k;
    ++i;
    while (i < n && lcp_[i] > k) ++i;
  }
}

}  // namespace kiln::grammar
