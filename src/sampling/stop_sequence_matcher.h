// Finds stop sequences in streamed text across token boundaries. Text that could still be the
// beginning of a stop sequence is held back until it either completes one (the stop sequence and
// everything after it is dropped) or cannot anymore (it is released). Input and output are
// complete UTF-8: stop sequences are valid UTF-8, so a held-back suffix always starts on a
// character boundary.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace kiln {

class StopSequenceMatcher {
 public:
  // `stops` must outlive the matcher (the request owns them).
  explicit StopSequenceMatcher(const std::vector<std::string>& stops);
  explicit StopSequenceMatcher(std::vector<std::string>&&) = delete;  // would dangle

  // Appends `text` and writes to `out` what is now safe to emit. Returns true when a stop
  // sequence completed: `out` then ends just before it and the matcher is done. With
  // `allow_match` false (min_tokens not reached yet) matches are not taken; text that is already
  // a complete stop sequence then can never match later.
  bool Push(std::string_view text, bool allow_match, std::string& out);
  // End of generation for another reason: releases whatever was held back.
  void Flush(std::string& out);

 private:
  size_t HeldSuffix() const;  // longest suffix of pending_ that is a proper prefix of a stop

  const std::vector<std::string>& stops_;
  std::string pending_;
  size_t matched_floor_ = 0;  // matches must end after this offset of pending_
};

}  // namespace kiln
