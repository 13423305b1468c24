#include "engine/speculation.h"

#include <algorithm>

namespace kiln {

void SpeculationState::Record(int32_t max_draft, int32_t num_drafted, int32_t num_accepted) {
  drafted += num_drafted;
  const int32_t k = K(max_draft);
  next_k = num_accepted == num_drafted ? std::min(max_draft, 2 * k)
                                       : std::clamp(num_accepted + 1, 1, max_draft);
}

void SpeculationCounters::Record(int32_t num_drafted, int32_t num_accepted) {
  ++drafts;
  draft_tokens += num_drafted;
  accepted_tokens += num_accepted;
  const double rate = static_cast<double>(num_accepted) / static_cast<double>(num_drafted);
  rate_sum += rate;
  size_t b = 0;
  while (b + 1 < kRateBounds.size() && rate > kRateBounds[b]) ++b;
  ++by_rate[b];
}

}  // namespace kiln
