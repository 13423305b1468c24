// A constraint compiled for one vocabulary: its lazy DFA and the allowed-token mask of every
// DFA state it has reached, computed once per state and kept (a decode step then costs a
// lookup). Shared by every sequence generating under the same constraint; the sequences keep
// only their DFA state (an int). Thread-safe: engines of several models may share one.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <unordered_map>
#include <vector>

#include "grammar/lazy_dfa.h"
#include "grammar/token_vocabulary.h"

namespace kiln::grammar {

class CompiledGrammar {
 public:
  static constexpr int32_t kDead = LazyDfa::kDead;

  // `nfa` with its start and accept states set; `max_dfa_states` bounds the DFA (and with it
  // the masks kept: one bit per vocabulary entry each).
  CompiledGrammar(ByteNfa nfa, std::shared_ptr<const TokenVocabulary> vocab,
                  int64_t max_dfa_states);

  int32_t start() const { return 0; }
  // The tokens allowed in `state` (mask_words() words; the end ids set when the constraint is
  // complete there). Throws kiln::Error when the DFA passes its state limit.
  std::span<const uint64_t> Mask(int32_t state);
  // The state after `token`; kDead when the token breaks the constraint. End ids keep the state.
  int32_t Advance(int32_t state, int32_t token);
  bool IsAccepting(int32_t state);
  const TokenVocabulary& vocabulary() const { return *vocab_; }

 private:
  std::mutex mu_;
  LazyDfa dfa_;
  std::shared_ptr<const TokenVocabulary> vocab_;
  std::unordered_map<int32_t, std::unique_ptr<std::vector<uint64_t>>> masks_;
};

}  // namespace kiln::grammar
