#include "tokenizer/hf/text.h"

#include <utf8proc.h>

#include <cstdlib>
#include <memory>

#include "tokenizer/unicode.h"
#include "util/error.h"

namespace kiln::hf {
namespace {

utf8proc_category_t Category(uint32_t cp) {
  return utf8proc_category(static_cast<utf8proc_int32_t>(cp));
}

}  // namespace

void ToCodepoints(std::string_view s, std::vector<uint32_t>* out) { unicode::DecodeUtf8(s, out); }

void AppendCodepoint(uint32_t cp, std::string* out) { unicode::AppendUtf8(cp, out); }

uint32_t DecodeAt(std::string_view s, size_t i, size_t* len) {
  const auto b0 = static_cast<uint8_t>(s[i]);
  const size_t n = CharLen(s, i);
  *len = n;
  if (n == 1) return b0;
  static constexpr uint8_t kLeadMask[5] = {0, 0, 0x1F, 0x0F, 0x07};
  uint32_t cp = b0 & kLeadMask[n];
  for (size_t k = 1; k < n; ++k) cp = (cp << 6) | (static_cast<uint8_t>(s[i + k]) & 0x3F);
  return cp;
}

size_t CharLen(std::string_view s, size_t i) {
  const size_t n = unicode::SeqLenFromLead(static_cast<uint8_t>(s[i]));
  return i + n <= s.size() ? n : s.size() - i;
}

bool IsWhitespace(uint32_t cp) { return (unicode::Flags(cp) & unicode::kWhitespace) != 0; }

bool IsNumeric(uint32_t cp) { return (unicode::Flags(cp) & unicode::kNumber) != 0; }

bool IsPunctuation(uint32_t cp) {
  if (cp < 0x80) {
    return (cp >= 0x21 && cp <= 0x2F) || (cp >= 0x3A && cp <= 0x40) || (cp >= 0x5B && cp <= 0x60) ||
           (cp >= 0x7B && cp <= 0x7E);
  }
  return (unicode::Flags(cp) & unicode::kPunctuation) != 0;
}

bool IsMark(uint32_t cp) { return (unicode::Flags(cp) & unicode::kMark) != 0; }

bool IsNonspacingMark(uint32_t cp) { return Category(cp) == UTF8PROC_CATEGORY_MN; }

bool IsOther(uint32_t cp) {
  return (unicode::Flags(cp) & (unicode::kControl | unicode::kUndefined)) != 0;
}

bool IsWordChar(uint32_t cp) {
  return cp == '_' ||
         (unicode::Flags(cp) & (unicode::kLetter | unicode::kNumber | unicode::kMark)) != 0;
}

std::string UnicodeNormalize(std::string_view s, NormalForm form) {
  if (s.empty()) return {};
  int options = UTF8PROC_STABLE;
  switch (form) {
    case NormalForm::kNfc:
      options |= UTF8PROC_COMPOSE;
      break;
    case NormalForm::kNfd:
      options |= UTF8PROC_DECOMPOSE;
      break;
    case NormalForm::kNfkc:
      options |= UTF8PROC_COMPOSE | UTF8PROC_COMPAT;
      break;
    case NormalForm::kNfkd:
      options |= UTF8PROC_DECOMPOSE | UTF8PROC_COMPAT;
      break;
  }
  utf8proc_uint8_t* result = nullptr;
  const utf8proc_ssize_t n = utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(s.data()),
                                          static_cast<utf8proc_ssize_t>(s.size()), &result,
                                          static_cast<utf8proc_option_t>(options));
  std::unique_ptr<utf8proc_uint8_t, decltype(&std::free)> owned(result, &std::free);
  KILN_CHECK(n >= 0, "Unicode normalization failed: ", utf8proc_errmsg(n));
  return std::string(reinterpret_cast<const char*>(result), static_cast<size_t>(n));
}

std::string Lowercase(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  std::vector<uint32_t> cps;
  ToCodepoints(s, &cps);
  for (uint32_t cp : cps) {
    if (cp < 0x80) {
      out += static_cast<char>(unicode::AsciiLower(cp));
    } else if (cp == 0x130) {  // the one unconditional multi-character lower-case mapping
      out += 'i';
      AppendCodepoint(0x307, &out);
    } else {
      AppendCodepoint(static_cast<uint32_t>(utf8proc_tolower(static_cast<utf8proc_int32_t>(cp))),
                      &out);
    }
  }
  return out;
}

}  // namespace kiln::hf
