// The distinct tokens of one sequence, for penalties: whether each appeared in the prompt and how
// often it was generated. An open-addressing table that grows geometrically, so steady-state
// generation does not allocate; iteration visits only the tokens seen, not the vocabulary.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace kiln {

class TokenCounts {
 public:
  struct Entry {
    int32_t token = -1;  // -1 = empty slot
    int32_t generated = 0;
    bool in_prompt = false;
  };

  void AddPrompt(int32_t token) { Slot(token).in_prompt = true; }
  void AddGenerated(int32_t token) { ++Slot(token).generated; }
  int32_t size() const { return static_cast<int32_t>(order_.size()); }
  const Entry* Find(int32_t token) const;

  template <typename F>  // f(const Entry&), in first-seen order
  void ForEach(F&& f) const {
    for (int32_t i : order_) f(slots_[i]);
  }

 private:
  Entry& Slot(int32_t token);
  void Grow();
  size_t Home(int32_t token) const {
    return (static_cast<uint32_t>(token) * 2654435761u) & (slots_.size() - 1);
  }

  std::vector<Entry> slots_;
  std::vector<int32_t> order_;  // occupied slot indices
};

}  // namespace kiln
