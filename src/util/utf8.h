// UTF-8 helpers for text that leaves the process (stdout, JSON).
#pragma once

#include <string>
#include <string_view>

namespace kiln {

// Length of the longest prefix of `s` made of complete, valid UTF-8 sequences, treating a
// truncated sequence at the very end as "not yet complete".
size_t CompleteUtf8Prefix(std::string_view s);

// `s` with every invalid byte sequence replaced by U+FFFD (as Python's errors="replace").
std::string ValidUtf8OrReplace(std::string_view s);

// Accumulates token bytes and releases only complete UTF-8 characters, so streamed text never
// splits a multi-byte character.
class Utf8StreamBuffer {
 public:
  std::string Push(std::string_view bytes);
  std::string Flush();  // whatever is left, invalid bytes replaced

 private:
  std::string pending_;
};

}  // namespace kiln
