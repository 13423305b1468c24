// Alignments from transformed text back to the original, as HF's NormalizedString keeps them
// to give token offsets: every byte of a normalized or pre-tokenized string records the byte
// range of the original text it comes from. Only EncodeWords tracks them; Encode never does.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace kiln::hf {

// The original bytes [begin, end) one byte of a transformed string comes from. All the bytes
// of one character share an Align (as in HF), and inserted characters share their neighbour's.
struct Align {
  uint32_t begin = 0;
  uint32_t end = 0;
  bool operator==(const Align&) const = default;
};
using Alignment = std::vector<Align>;

// Each character of `s` aligned to itself, `base` being the offset of s[0] in the original.
Alignment IdentityAlignment(std::string_view s, uint32_t base);

// The original range of the transformed bytes [start, end) (non-empty, within `a`): from the
// first byte's begin to the last byte's end, as HF's convert_offsets.
Align RangeOf(const Alignment& a, size_t start, size_t end);

// Aligns `out`, the result of a transformation `step` of `in` (aligned by `in_align`), for a
// step that gives no alignment of its own: each character of `in` is transformed alone and
// matched against `out` (exact when the step maps characters independently, as lowercasing,
// NFD, accent stripping or BERT's clean-up do). A character whose result does not match is
// joined with the next ones (up to a few) until the group's result matches, and the group's
// output gets the group's range (NFC composing e + U+0301). When no group matches, the rest of
// `out` is aligned to the rest of `in` proportionally, in characters: never out of range.
Alignment AlignByCharacters(std::string_view in, const Alignment& in_align, std::string_view out,
                            const std::function<std::string(std::string_view)>& step);

// For each byte offset of ValidUtf8OrReplace(input) that starts a character (and its end), the
// offset in `input`: the invalid sequences that became U+FFFD map back to their bytes.
std::vector<uint32_t> RepairedToInput(std::string_view input, std::string_view repaired);

}  // namespace kiln::hf
