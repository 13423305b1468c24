// A nondeterministic automaton over bytes (Thompson construction), the form every constraint
// (regex, JSON schema) is compiled to before the lazy DFA (lazy_dfa.h) runs it. Text is UTF-8:
// a character class becomes the byte sequences of its code points (AddCodepoints).
#pragma once

#include <cstdint>
#include <vector>

namespace kiln::grammar {

struct ByteEdge {
  uint8_t lo = 0, hi = 0;  // inclusive byte range
  int32_t target = 0;
};

struct NfaState {
  std::vector<ByteEdge> edges;
  std::vector<int32_t> epsilon;
};

// A sub-automaton: enter at `start`, leave from `end` (which has no edges of its own yet).
struct Fragment {
  int32_t start = 0, end = 0;
};

// Inclusive code point range.
struct CodepointRange {
  uint32_t lo = 0, hi = 0;
};

class ByteNfa {
 public:
  // Refuses (kiln::Error, "the constraint is too large: ...") past `max_states` states.
  explicit ByteNfa(int64_t max_states) : max_states_(max_states) {}

  int32_t AddState();
  void AddEdge(int32_t from, uint8_t lo, uint8_t hi, int32_t to);
  void AddEpsilon(int32_t from, int32_t to);

  Fragment Empty();
  // Any one code point in `ranges` (sorted or not; surrogates never match), UTF-8 encoded.
  Fragment Codepoints(const std::vector<CodepointRange>& ranges);
  Fragment Concat(Fragment a, Fragment b);
  Fragment Alternate(const std::vector<Fragment>& options);
  Fragment Optional(Fragment f);
  Fragment Star(Fragment f);

  void set_start(int32_t s) { start_ = s; }
  void set_accept(int32_t s) { accept_ = s; }
  int32_t start() const { return start_; }
  int32_t accept() const { return accept_; }
  const NfaState& state(int32_t i) const { return states_[i]; }
  int64_t size() const { return static_cast<int64_t>(states_.size()); }

 private:
  void AddUtf8Range(uint32_t lo, uint32_t hi, int32_t from, int32_t to);
  void AddByteSequence(const uint8_t* lo, const uint8_t* hi, int n, int32_t from, int32_t to);

  int64_t max_states_;
  std::vector<NfaState> states_;
  int32_t start_ = 0, accept_ = 0;
};

}  // namespace kiln::grammar
