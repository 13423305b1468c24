// Character predicates and string transforms with the meanings Rust gives them, which is what
// the HF tokenizers library's normalizers and pre-tokenizers use (char::is_whitespace,
// char::is_numeric, char::to_lowercase, ...). Inputs are valid UTF-8.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace kiln::hf {

void ToCodepoints(std::string_view s, std::vector<uint32_t>* out);
void AppendCodepoint(uint32_t cp, std::string* out);
// The code point at s[i] (a valid sequence), its length in *len.
uint32_t DecodeAt(std::string_view s, size_t i, size_t* len);
// Byte length of the UTF-8 character starting at s[i].
size_t CharLen(std::string_view s, size_t i);

bool IsWhitespace(uint32_t cp);   // White_Space
bool IsNumeric(uint32_t cp);      // Nd, Nl, No
bool IsPunctuation(uint32_t cp);  // ASCII punctuation or P*
bool IsMark(uint32_t cp);         // Mn, Mc, Me
bool IsNonspacingMark(uint32_t cp);
bool IsOther(uint32_t cp);     // Cc, Cf, Cs, Co, Cn
bool IsWordChar(uint32_t cp);  // alphanumeric (letters, marks, numbers) or '_'

enum class NormalForm { kNfc, kNfd, kNfkc, kNfkd };
std::string UnicodeNormalize(std::string_view s, NormalForm form);
// Full lower-casing per character (U+0130 becomes "i" + U+0307, as Rust does).
std::string Lowercase(std::string_view s);

}  // namespace kiln::hf
