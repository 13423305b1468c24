#include "sampling/stop_sequence_matcher.h"

#include <algorithm>

namespace kiln {

StopSequenceMatcher::StopSequenceMatcher(const std::vector<std::string>& stops) : stops_(stops) {}

bool StopSequenceMatcher::Push(std::string_view text, bool allow_match, std::string& out) {
  if (stops_.empty()) {
    out.append(text);
    return false;
  }
  pending_.append(text);
  if (allow_match) {
    size_t first = std::string::npos;  // earliest start of a stop sequence ending past the floor
    for (const std::string& s : stops_) {
      const size_t from = matched_floor_ >= s.size() ? matched_floor_ - s.size() + 1 : 0;
      first = std::min(first, pending_.find(s, from));
    }
    if (first != std::string::npos) {
      out.append(pending_, 0, first);
      pending_.clear();
      matched_floor_ = 0;
      return true;
    }
  } else {
    matched_floor_ = pending_.size();
  }
  const size_t emit = pending_.size() - HeldSuffix();
  out.append(pending_, 0, emit);
  pending_.erase(0, emit);
  matched_floor_ = matched_floor_ > emit ? matched_floor_ - emit : 0;
  return false;
}

void StopSequenceMatcher::Flush(std::string& out) {
  out.append(pending_);
  pending_.clear();
  matched_floor_ = 0;
}

size_t StopSequenceMatcher::HeldSuffix() const {
  const std::string_view p = pending_;
  size_t best = 0;
  for (const std::string& s : stops_) {
    for (size_t len = std::min(s.size() - 1, p.size()); len > best; --len) {
      if (p.substr(p.size() - len) == std::string_view(s).substr(0, len)) {
        best = len;
        break;
      }
    }
  }
  return best;
}

}  // namespace kiln
