// Splitting a string at pattern matches with the HF tokenizers "SplitDelimiterBehavior"s, and
// the piece type the pre-tokenizers pass along.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/hf/alignment.h"
#include "tokenizer/hf/regex.h"

namespace kiln::hf {

// A piece of text between pipeline steps. `first`: it starts at offset 0 of the original input
// (Metaspace's prepend_scheme "first" looks at that). `align`: empty, or (EncodeWords) one
// entry per byte of `text`, which every step that splits or rewrites the text keeps so.
struct Piece {
  std::string text;
  bool first = false;
  Alignment align;
};

// Whether `p` carries an alignment to keep up to date.
inline bool Aligned(const Piece& p) { return !p.align.empty() && p.align.size() == p.text.size(); }

enum class SplitBehavior { kRemoved, kIsolated, kMergedWithPrevious, kMergedWithNext, kContiguous };

// "Removed", "Isolated", ...; throws kiln::Error naming `where` otherwise.
SplitBehavior ParseSplitBehavior(std::string_view name, std::string_view where);

// A stretch of the string, a match of the pattern or the text between two matches.
struct Span {
  size_t start;
  size_t end;
  bool match;
};

// Matches (sorted, non-overlapping) -> spans covering [0, len); `invert` swaps match/non-match.
void SpansFromMatches(size_t len, const std::vector<Match>& matches, bool invert,
                      std::vector<Span>* spans);

// Each character for which pred(code point) holds is a match of its own.
template <typename Pred>
void SpansFromChars(std::string_view s, Pred pred, std::vector<Span>* spans);

// The pieces [start, end) the behavior keeps, empty ones dropped.
void ApplyBehavior(const std::vector<Span>& spans, SplitBehavior behavior,
                   std::vector<Match>* pieces);

// Replaces `pieces` by the sub-pieces `split(text, &ranges)` cuts from each.
template <typename SplitFn>
void SplitPieces(std::vector<Piece>* pieces, SplitFn split) {
  std::vector<Piece> out;
  out.reserve(pieces->size());
  std::vector<Match> ranges;
  for (Piece& p : *pieces) {
    ranges.clear();
    split(std::string_view(p.text), &ranges);
    if (ranges.size() == 1 && ranges[0].start == 0 && ranges[0].end == p.text.size()) {
      out.push_back(std::move(p));
      continue;
    }
    const bool aligned = Aligned(p);
    for (const Match& r : ranges) {
      out.push_back({p.text.substr(r.start, r.end - r.start), p.first && r.start == 0, {}});
      if (aligned) out.back().align.assign(p.align.begin() + r.start, p.align.begin() + r.end);
    }
  }
  pieces->swap(out);
}

}  // namespace kiln::hf

#include "tokenizer/hf/split_inl.h"
