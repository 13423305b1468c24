#include "sampling/stop_criteria.h"

#include <algorithm>

namespace kiln {

StopCriteria::StopCriteria(const StopParams& params, std::span<const int32_t> eos_ids)
    : stop_ids_(params.stop_token_ids),
      max_new_tokens_(params.max_new_tokens),
      min_tokens_(params.min_tokens) {
  if (!params.ignore_eos) stop_ids_.insert(stop_ids_.end(), eos_ids.begin(), eos_ids.end());
  std::sort(stop_ids_.begin(), stop_ids_.end());
  stop_ids_.erase(std::unique(stop_ids_.begin(), stop_ids_.end()), stop_ids_.end());
}

bool StopCriteria::IsStopToken(int32_t token) const {
  return std::binary_search(stop_ids_.begin(), stop_ids_.end(), token);
}

std::span<const int32_t> StopCriteria::Suppressed(int32_t generated) const {
  if (MinReached(generated)) return {};
  return stop_ids_;
}

}  // namespace kiln
