#include "engine/ngram_proposer.h"

#include <algorithm>

namespace kiln {

void ProposeNgram(std::span<const int32_t> history, int32_t k, const NgramConfig& config,
                  std::vector<int32_t>& draft) {
  draft.clear();
  const int64_t size = static_cast<int64_t>(history.size());
  if (k <= 0 || size < 2) return;
  const int64_t lowest = std::max<int64_t>(0, size - config.max_lookback);
  const int64_t longest = std::min<int64_t>(config.max_ngram, size - 1);
  for (int64_t n = longest; n >= std::max(1, config.min_ngram); --n) {
    const std::span<const int32_t> suffix = history.subspan(size - n);
    // Candidate starts i with history[i, i + n) == suffix and i + n < size (something follows).
    for (int64_t i = size - n - 1; i >= lowest; --i) {
      if (history[i] != suffix[0] ||
          !std::equal(suffix.begin() + 1, suffix.end(), history.begin() + i + 1)) {
        continue;
      }
      const int64_t from = i + n, to = std::min(size, from + k);
      draft.assign(history.begin() + from, history.begin() + to);
      return;
    }
  }
}

}  // namespace kiln
