// Template part of split.h.
#pragma once

#include "tokenizer/hf/text.h"

namespace kiln::hf {

template <typename Pred>
void SpansFromChars(std::string_view s, Pred pred, std::vector<Span>* spans) {
  spans->clear();
  size_t last = 0;
  for (size_t i = 0; i < s.size();) {
    size_t n = 1;
    const uint32_t cp = DecodeAt(s, i, &n);
    if (pred(cp)) {
      if (last < i) spans->push_back({last, i, false});
      spans->push_back({i, i + n, true});
      last = i + n;
    }
    i += n;
  }
  if (last < s.size()) spans->push_back({last, s.size(), false});
}

}  // namespace kiln::hf
