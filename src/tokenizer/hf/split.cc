#include "tokenizer/hf/split.h"

#include <algorithm>

#include "util/error.h"

namespace kiln::hf {

SplitBehavior ParseSplitBehavior(std::string_view name, std::string_view where) {
  if (name == "Removed") return SplitBehavior::kRemoved;
  if (name == "Isolated") return SplitBehavior::kIsolated;
  if (name == "MergedWithPrevious") return SplitBehavior::kMergedWithPrevious;
  if (name == "MergedWithNext") return SplitBehavior::kMergedWithNext;
  if (name == "Contiguous") return SplitBehavior::kContiguous;
  throw Error(StrCat(std::string(where), ": unknown split behavior '", std::string(name),
                     "' (Removed, Isolated, MergedWithPrevious, MergedWithNext, Contiguous)"));
}

void SpansFromMatches(size_t len, const std::vector<Match>& matches, bool invert,
                      std::vector<Span>* spans) {
  spans->clear();
  size_t prev = 0;
  for (const Match& m : matches) {
    if (prev != m.start) spans->push_back({prev, m.start, invert});
    spans->push_back({m.start, m.end, !invert});
    prev = m.end;
  }
  if (prev != len) spans->push_back({prev, len, invert});
}

void ApplyBehavior(const std::vector<Span>& spans, SplitBehavior behavior,
                   std::vector<Match>* pieces) {
  pieces->clear();
  auto keep = [&](size_t start, size_t end) { pieces->push_back({start, end}); };
  bool previous_match = false;
  switch (behavior) {
    case SplitBehavior::kIsolated:
      for (const Span& s : spans) keep(s.start, s.end);
      break;
    case SplitBehavior::kRemoved:
      for (const Span& s : spans) {
        if (!s.match) keep(s.start, s.end);
      }
      break;
    case SplitBehavior::kContiguous:
      for (const Span& s : spans) {
        if (s.match == previous_match && !pieces->empty()) {
          pieces->back().end = s.end;
        } else {
          keep(s.start, s.end);
        }
        previous_match = s.match;
      }
      break;
    case SplitBehavior::kMergedWithPrevious:
      for (const Span& s : spans) {
        if (s.match && !previous_match && !pieces->empty()) {
          pieces->back().end = s.end;
        } else {
          keep(s.start, s.end);
        }
        previous_match = s.match;
      }
      break;
    case SplitBehavior::kMergedWithNext:
      // Walks backwards: a match joins the piece after it.
      for (size_t i = spans.size(); i-- > 0;) {
        const Span& s = spans[i];
        if (s.match && !previous_match && !pieces->empty()) {
          pieces->back().start = s.start;
        } else {
          keep(s.start, s.end);
        }
        previous_match = s.match;
      }
      std::reverse(pieces->begin(), pieces->end());
      break;
  }
  std::erase_if(*pieces, [](const Match& m) { return m.start == m.end; });
}

}  // namespace kiln::hf
