#include "grammar/compiled_grammar.h"

#include <algorithm>

namespace kiln::grammar {

CompiledGrammar::CompiledGrammar(ByteNfa nfa, std::shared_ptr<const TokenVocabulary> vocab,
                                 int64_t max_dfa_states)
    : dfa_(std::move(nfa), max_dfa_states), vocab_(std::move(vocab)) {}

std::span<const uint64_t> CompiledGrammar::Mask(int32_t state) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = masks_.find(state);
  if (it == masks_.end()) {
    auto mask = std::make_unique<std::vector<uint64_t>>(vocab_->mask_words(), 0);
    vocab_->AllowedTokens(dfa_, state, mask->data());
    if (dfa_.IsAccepting(state)) {
      for (int32_t id : vocab_->end_ids()) {
        if (id >= 0 && id < vocab_->size()) (*mask)[id >> 6] |= uint64_t{1} << (id & 63);
      }
    }
    it = masks_.emplace(state, std::move(mask)).first;
  }
  // The vector is never changed or freed while the grammar lives: safe to read unlocked.
  return *it->second;
}

int32_t CompiledGrammar::Advance(int32_t state, int32_t token) {
  std::lock_guard<std::mutex> lock(mu_);
  if (state == kDead || token < 0 || token >= vocab_->size()) return kDead;
  const std::vector<int32_t>& ends = vocab_->end_ids();
  if (std::find(ends.begin(), ends.end(), token) != ends.end()) {
    return dfa_.IsAccepting(state) ? state : kDead;
  }
  if (!vocab_->is_text(token)) return kDead;
  for (char c : vocab_->piece(token)) {
    state = dfa_.Step(state, static_cast<uint8_t>(c));
    if (state == kDead) break;
  }
  return state;
}

bool CompiledGrammar::IsAccepting(int32_t state) {
  std::lock_guard<std::mutex> lock(mu_);
  return state != kDead && dfa_.IsAccepting(state);
}

}  // namespace kiln::grammar
