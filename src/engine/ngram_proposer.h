// Prompt-lookup drafting (n-gram speculation, no extra model): the tokens that followed the most
// recent earlier occurrence of the sequence's last n tokens are proposed as its next ones. Pays
// off where the output copies its input (editing, summarising, code, extraction); on text that
// never repeats no n-gram matches and nothing is drafted, so nothing is spent.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace kiln {

struct NgramConfig {
  int32_t min_ngram = 1;  // shortest suffix that may match (1: a single token)
  int32_t max_ngram = 3;  // longest suffix tried first: longer matches predict better
  // How far back (tokens) the search looks; bounds the cost per step on long contexts.
  int32_t max_lookback = 8192;
};

// Appends up to `k` proposed tokens to `draft` (cleared first). The suffix of length n, from
// max_ngram down to min_ngram, is looked up right to left in history[.., size - n), so the
// nearest occurrence wins; the first n with a match decides. Empty when nothing matches.
// O(lookback * n) per call.
void ProposeNgram(std::span<const int32_t> history, int32_t k, const NgramConfig& config,
                  std::vector<int32_t>& draft);

}  // namespace kiln
