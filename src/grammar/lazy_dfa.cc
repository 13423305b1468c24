#include "grammar/lazy_dfa.h"

#include <algorithm>

#include "util/error.h"

namespace kiln::grammar {
namespace {
constexpr int32_t kUnknown = -2;
}  // namespace

size_t LazyDfa::SetHash::operator()(const std::vector<int32_t>& v) const {
  uint64_t h = 1469598103934665603ull;
  for (int32_t x : v) h = (h ^ static_cast<uint32_t>(x)) * 1099511628211ull;
  return static_cast<size_t>(h);
}

LazyDfa::LazyDfa(ByteNfa nfa, int64_t max_states)
    : nfa_(std::move(nfa)), max_states_(max_states), mark_(nfa_.size(), 0) {
  std::vector<int32_t> start = {nfa_.start()};
  Intern(start);
}

void LazyDfa::Close(std::vector<int32_t>& set) {
  if (++epoch_ == 0) {  // wrapped: clear the marks once every 4 billion closures
    std::fill(mark_.begin(), mark_.end(), 0);
    epoch_ = 1;
  }
  for (int32_t s : set) mark_[s] = epoch_;
  for (size_t i = 0; i < set.size(); ++i) {
    for (int32_t t : nfa_.state(set[i]).epsilon) {
      if (mark_[t] != epoch_) {
        mark_[t] = epoch_;
        set.push_back(t);
      }
    }
  }
  // Only states with byte edges, and the accept state, tell DFA states apart.
  std::erase_if(set, [&](int32_t s) { return nfa_.state(s).edges.empty() && s != nfa_.accept(); });
  std::sort(set.begin(), set.end());
  set.erase(std::unique(set.begin(), set.end()), set.end());
}

int32_t LazyDfa::Intern(std::vector<int32_t>& set) {
  Close(set);
  if (set.empty()) return kDead;
  auto it = ids_.find(set);
  if (it != ids_.end()) return it->second;
  if (num_states() >= max_states_) {
    throw Error(
        StrCat("the constraint is too complex: its automaton passed ", max_states_, " states"));
  }
  const auto id = static_cast<int32_t>(sets_.size());
  const bool accepting = std::binary_search(set.begin(), set.end(), nfa_.accept());
  ids_.emplace(set, id);
  sets_.push_back(std::move(set));
  next_.resize(next_.size() + 256, kUnknown);
  accepting_.push_back(accepting ? 1 : 0);
  return id;
}

int32_t LazyDfa::Step(int32_t state, uint8_t byte) {
  int32_t& cached = next_[static_cast<size_t>(state) * 256 + byte];
  if (cached != kUnknown) return cached;
  std::vector<int32_t> targets;
  for (int32_t s : sets_[state]) {
    for (const ByteEdge& e : nfa_.state(s).edges) {
      if (byte >= e.lo && byte <= e.hi) targets.push_back(e.target);
    }
  }
  const int32_t id = Intern(targets);
  // Intern may have grown next_: index again rather than through `cached`.
  next_[static_cast<size_t>(state) * 256 + byte] = id;
  return id;
}

}  // namespace kiln::grammar
