#include "bench/synthetic_prompt.h"

#include <algorithm>
#include <cstdlib>
#include <vector>

#include "bench/text_source.h"

namespace kiln::bench {
namespace {

// Ids of at least `needed` tokens of filler text for `seed`.
std::vector<int32_t> FillerIds(const PromptTokenizer& tokenizer, int64_t needed, uint64_t seed) {
  int64_t words = needed + 8;
  while (true) {
    std::vector<int32_t> ids = tokenizer.Encode(GenerateWords(seed, words));
    if (static_cast<int64_t>(ids.size()) >= needed + 4) return ids;
    words *= 2;
  }
}

}  // namespace

SyntheticPrompt MakeSyntheticPrompt(const PromptTokenizer& tokenizer, int64_t tokens,
                                    uint64_t seed) {
  const int64_t special = tokenizer.CountPromptTokens("");
  const int64_t target_ids = std::max<int64_t>(1, tokens - special);
  std::vector<int32_t> ids = FillerIds(tokenizer, target_ids + 32, seed);

  SyntheticPrompt best;
  int64_t best_error = -1;
  // Cutting between two tokens can merge or split pieces on re-encoding. Correcting the cut
  // converges in practice; when it oscillates (the end splits a word that only encodes whole
  // to more tokens), starting one token later moves the cut elsewhere.
  for (int64_t shift = 0; shift < 16 && best_error != 0; ++shift) {
    int64_t keep = target_ids;
    for (int attempt = 0; attempt < 6; ++attempt) {
      if (shift + keep + 4 > static_cast<int64_t>(ids.size())) {
        ids = FillerIds(tokenizer, shift + keep + 32, seed);
      }
      std::vector<int32_t> window(ids.begin() + shift, ids.begin() + shift + keep);
      std::string text = tokenizer.Decode(window);
      const int64_t count = tokenizer.CountPromptTokens(text);
      const int64_t error = std::llabs(count - tokens);
      if (best_error < 0 || error < best_error) {
        best = {std::move(text), count};
        best_error = error;
      }
      const int64_t next = keep + (tokens - count);
      if (error == 0 || next < 1 || next == keep) break;
      keep = next;
    }
  }
  return best;
}

}  // namespace kiln::bench
