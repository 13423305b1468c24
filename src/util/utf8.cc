#include "util/utf8.h"

#include <cstdint>

namespace kiln {
namespace {

struct Sequence {
  enum Kind { kValid, kInvalid, kTruncated } kind;
  int len;  // bytes of the character, or of the maximal valid prefix (>= 1) when not valid
};

// Classifies the UTF-8 sequence starting at s[i]. kTruncated: a valid prefix running off the end
// of `s`. Invalid sequences report their maximal valid prefix, which Unicode (and Python's
// errors="replace") turns into one U+FFFD.
Sequence ReadSequence(std::string_view s, size_t i) {
  const auto b0 = static_cast<uint8_t>(s[i]);
  if (b0 < 0x80) return {Sequence::kValid, 1};
  int len;
  uint8_t lo = 0x80, hi = 0xBF;  // allowed range of the second byte
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    len = 2;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    len = 3;
    if (b0 == 0xE0) lo = 0xA0;
    if (b0 == 0xED) hi = 0x9F;  // no surrogates
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    len = 4;
    if (b0 == 0xF0) lo = 0x90;
    if (b0 == 0xF4) hi = 0x8F;
  } else {
    return {Sequence::kInvalid, 1};
  }
  for (int k = 1; k < len; ++k) {
    if (i + k >= s.size()) return {Sequence::kTruncated, k};
    const auto b = static_cast<uint8_t>(s[i + k]);
    const uint8_t min = k == 1 ? lo : 0x80, max = k == 1 ? hi : 0xBF;
    if (b < min || b > max) return {Sequence::kInvalid, k};
  }
  return {Sequence::kValid, len};
}

}  // namespace

size_t CompleteUtf8Prefix(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    Sequence seq = ReadSequence(s, i);
    if (seq.kind == Sequence::kTruncated) return i;
    i += seq.len;
  }
  return i;
}

std::string ValidUtf8OrReplace(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    Sequence seq = ReadSequence(s, i);
    if (seq.kind == Sequence::kValid) {
      out.append(s.substr(i, seq.len));
    } else {
      out += "\xEF\xBF\xBD";
    }
    i += seq.len;
  }
  return out;
}

std::string Utf8StreamBuffer::Push(std::string_view bytes) {
  pending_.append(bytes);
  size_t n = CompleteUtf8Prefix(pending_);
  std::string out = ValidUtf8OrReplace(std::string_view(pending_).substr(0, n));
  pending_.erase(0, n);
  return out;
}

std::string Utf8StreamBuffer::Flush() {
  std::string out = ValidUtf8OrReplace(pending_);
  pending_.clear();
  return out;
}

}  // namespace kiln
