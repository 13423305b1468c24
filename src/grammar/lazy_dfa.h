// The deterministic form of a ByteNfa, built on demand (subset construction one transition at a
// time): a constraint's DFA can be exponentially larger than its NFA, but generation visits
// only the states its output passes through and the token masks computed from them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <unordered_map>
#include <vector>

#include "grammar/byte_nfa.h"

namespace kiln::grammar {

class LazyDfa {
 public:
  static constexpr int32_t kDead = -1;

  // Refuses (kiln::Error) a step that would create more than `max_states` states.
  LazyDfa(ByteNfa nfa, int64_t max_states);

  int32_t start() const { return 0; }
  int32_t Step(int32_t state, uint8_t byte);  // kDead when no NFA state survives
  bool IsAccepting(int32_t state) const { return accepting_[state] != 0; }
  int64_t num_states() const { return static_cast<int64_t>(sets_.size()); }

 private:
  struct SetHash {
    size_t operator()(const std::vector<int32_t>& v) const;
  };
  int32_t Intern(std::vector<int32_t>& set);  // epsilon-closes, sorts, finds or adds
  void Close(std::vector<int32_t>& set);

  ByteNfa nfa_;
  int64_t max_states_;
  std::vector<std::vector<int32_t>> sets_;  // NFA states of each DFA state, sorted
  std::vector<int32_t> next_;               // [state * 256 + byte]: -2 = not computed yet
  std::vector<uint8_t> accepting_;
  std::unordered_map<std::vector<int32_t>, int32_t, SetHash> ids_;
  std::vector<uint32_t> mark_;  // per NFA state: epoch of the last closure that reached it
  uint32_t epoch_ = 0;
};

}  // namespace kiln::grammar
