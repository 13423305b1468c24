// Unicode helpers for the tokenizers: code point classes as llama.cpp's pre-tokenizers see them,
// lenient UTF-8 decoding (invalid bytes become U+FFFD, like llama.cpp), and GPT-2's byte <->
// printable-character mapping used by byte-level BPE vocabularies.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace kiln::unicode {

// Code point class bits. One general-category bit (from the Unicode database via utf8proc) plus
// kWhitespace for the Unicode White_Space property.
enum CpFlag : uint16_t {
  kUndefined = 1 << 0,    // Cn (unassigned)
  kNumber = 1 << 1,       // \p{N}
  kLetter = 1 << 2,       // \p{L}
  kSeparator = 1 << 3,    // \p{Z}
  kMark = 1 << 4,         // \p{M}
  kPunctuation = 1 << 5,  // \p{P}
  kSymbol = 1 << 6,       // \p{S}
  kControl = 1 << 7,      // \p{C} (Cc, Cf, Co, Cs)
  kCategoryMask = 0xFF,
  kWhitespace = 1 << 8,  // \s (White_Space)
};

inline constexpr uint32_t kReplacementChar = 0xFFFD;
inline constexpr uint32_t kMaxCodepoint = 0x10FFFF;

// Class bits of a code point; kUndefined beyond U+10FFFF.
uint16_t Flags(uint32_t cp);

// Bytes in the UTF-8 sequence a lead byte announces (1 for continuation and invalid bytes),
// judged from the high nibble only, as SentencePiece-style splitting does.
inline size_t SeqLenFromLead(uint8_t lead) {
  static constexpr uint8_t kLen[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4};
  return kLen[lead >> 4];
}

// Decodes UTF-8 leniently: a byte that does not start a complete sequence becomes U+FFFD and
// decoding resumes at the next byte; overlong forms are accepted as they decode; values beyond
// U+10FFFF become U+FFFD. Appends to *out.
void DecodeUtf8(std::string_view text, std::vector<uint32_t>* out);

// Appends the UTF-8 encoding of cp (cp <= U+10FFFF; surrogates are encoded as three bytes).
void AppendUtf8(uint32_t cp, std::string* out);
size_t Utf8Len(uint32_t cp);

// ASCII-only lower-casing (what the contraction rules of the pre-tokenizers need).
inline uint32_t AsciiLower(uint32_t cp) { return (cp >= 'A' && cp <= 'Z') ? cp + 32 : cp; }

// GPT-2 byte-level mapping: every byte has a printable stand-in code point.
uint32_t ByteToCodepoint(uint8_t b);
// UTF-8 of ByteToCodepoint(b) (one or two bytes).
std::string_view ByteToUtf8(uint8_t b);
// Inverse mapping; -1 when cp is no byte's stand-in.
int CodepointToByte(uint32_t cp);

}  // namespace kiln::unicode
