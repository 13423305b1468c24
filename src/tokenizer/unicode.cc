#include "tokenizer/unicode.h"

#include <utf8proc.h>

#include <array>
#include <memory>

namespace kiln::unicode {
namespace {

uint16_t FlagsFromCategory(utf8proc_category_t cat) {
  switch (cat) {
    case UTF8PROC_CATEGORY_LU:
    case UTF8PROC_CATEGORY_LL:
    case UTF8PROC_CATEGORY_LT:
    case UTF8PROC_CATEGORY_LM:
    case UTF8PROC_CATEGORY_LO:
      return kLetter;
    case UTF8PROC_CATEGORY_MN:
    case UTF8PROC_CATEGORY_MC:
    case UTF8PROC_CATEGORY_ME:
      return kMark;
    case UTF8PROC_CATEGORY_ND:
    case UTF8PROC_CATEGORY_NL:
    case UTF8PROC_CATEGORY_NO:
      return kNumber;
    case UTF8PROC_CATEGORY_PC:
    case UTF8PROC_CATEGORY_PD:
    case UTF8PROC_CATEGORY_PS:
    case UTF8PROC_CATEGORY_PE:
    case UTF8PROC_CATEGORY_PI:
    case UTF8PROC_CATEGORY_PF:
    case UTF8PROC_CATEGORY_PO:
      return kPunctuation;
    case UTF8PROC_CATEGORY_SM:
    case UTF8PROC_CATEGORY_SC:
    case UTF8PROC_CATEGORY_SK:
    case UTF8PROC_CATEGORY_SO:
      return kSymbol;
    case UTF8PROC_CATEGORY_ZS:
    case UTF8PROC_CATEGORY_ZL:
    case UTF8PROC_CATEGORY_ZP:
      return kSeparator;
    case UTF8PROC_CATEGORY_CC:
    case UTF8PROC_CATEGORY_CF:
    case UTF8PROC_CATEGORY_CS:
    case UTF8PROC_CATEGORY_CO:
      return kControl;
    case UTF8PROC_CATEGORY_CN:
    default:
      return kUndefined;
  }
}

// The Unicode White_Space property (PropList.txt).
bool IsWhiteSpace(uint32_t cp) {
  if (cp >= 0x09 && cp <= 0x0D) return true;
  if (cp >= 0x2000 && cp <= 0x200A) return true;
  switch (cp) {
    case 0x20:
    case 0x85:
    case 0xA0:
    case 0x1680:
    case 0x2028:
    case 0x2029:
    case 0x202F:
    case 0x205F:
    case 0x3000:
      return true;
    default:
      return false;
  }
}

// One entry per code point, built once (2.2 MB).
const uint16_t* FlagTable() {
  static const std::unique_ptr<uint16_t[]> table = [] {
    auto t = std::make_unique<uint16_t[]>(kMaxCodepoint + 1);
    for (uint32_t cp = 0; cp <= kMaxCodepoint; ++cp) {
      uint16_t f;
      if (cp >= 0xD800 && cp <= 0xDFFF) {
        f = kControl;  // surrogates (Cs); utf8proc does not classify them
      } else if ((cp >= 0x2FFC && cp <= 0x2FFF) || cp == 0x31EF) {
        f = kSymbol;  // Unicode 15.1 additions (utf8proc 2.8 knows Unicode 15.0)
      } else if (cp >= 0x2EBF0 && cp <= 0x2EE5D) {
        f = kLetter;  // CJK Extension I, Unicode 15.1
      } else {
        f = FlagsFromCategory(utf8proc_category(static_cast<utf8proc_int32_t>(cp)));
      }
      if (IsWhiteSpace(cp)) f |= kWhitespace;
      t[cp] = f;
    }
    return t;
  }();
  return table.get();
}

struct ByteMap {
  std::array<uint32_t, 256> to_cp{};
  std::array<std::string, 256> to_utf8;
  std::array<int16_t, 512> from_cp{};  // every stand-in code point is < 512
};

const ByteMap& GetByteMap() {
  static const ByteMap map = [] {
    ByteMap m;
    m.from_cp.fill(-1);
    auto printable = [](int b) {
      return (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
    };
    uint32_t next = 256;
    for (int b = 0; b < 256; ++b) {
      const uint32_t cp = printable(b) ? static_cast<uint32_t>(b) : next++;
      m.to_cp[b] = cp;
      AppendUtf8(cp, &m.to_utf8[b]);
      m.from_cp[cp] = static_cast<int16_t>(b);
    }
    return m;
  }();
  return map;
}

inline bool IsCont(uint8_t c) { return (c & 0xC0) == 0x80; }

}  // namespace

uint16_t Flags(uint32_t cp) {
  if (cp > kMaxCodepoint) return kUndefined;
  return FlagTable()[cp];
}

void DecodeUtf8(std::string_view text, std::vector<uint32_t>* out) {
  const auto* s = reinterpret_cast<const uint8_t*>(text.data());
  const size_t n = text.size();
  out->reserve(out->size() + n);
  size_t i = 0;
  while (i < n) {
    const uint8_t c0 = s[i];
    if (c0 < 0x80) {
      out->push_back(c0);
      i += 1;
    } else if (!(c0 & 0x40)) {
      out->push_back(kReplacementChar);
      i += 1;
    } else if (!(c0 & 0x20)) {
      if (i + 1 < n && IsCont(s[i + 1])) {
        out->push_back(((c0 & 0x1Fu) << 6) | (s[i + 1] & 0x3Fu));
        i += 2;
      } else {
        out->push_back(kReplacementChar);
        i += 1;
      }
    } else if (!(c0 & 0x10)) {
      if (i + 2 < n && IsCont(s[i + 1]) && IsCont(s[i + 2])) {
        out->push_back(((c0 & 0x0Fu) << 12) | ((s[i + 1] & 0x3Fu) << 6) | (s[i + 2] & 0x3Fu));
        i += 3;
      } else {
        out->push_back(kReplacementChar);
        i += 1;
      }
    } else if (!(c0 & 0x08)) {
      if (i + 3 < n && IsCont(s[i + 1]) && IsCont(s[i + 2]) && IsCont(s[i + 3])) {
        const uint32_t cp = ((c0 & 0x07u) << 18) | ((s[i + 1] & 0x3Fu) << 12) |
                            ((s[i + 2] & 0x3Fu) << 6) | (s[i + 3] & 0x3Fu);
        out->push_back(cp <= kMaxCodepoint ? cp : kReplacementChar);
        i += 4;
      } else {
        out->push_back(kReplacementChar);
        i += 1;
      }
    } else {
      out->push_back(kReplacementChar);
      i += 1;
    }
  }
}

size_t Utf8Len(uint32_t cp) {
  if (cp <= 0x7F) return 1;
  if (cp <= 0x7FF) return 2;
  if (cp <= 0xFFFF) return 3;
  return 4;
}

void AppendUtf8(uint32_t cp, std::string* out) {
  if (cp <= 0x7F) {
    out->push_back(static_cast<char>(cp));
  } else if (cp <= 0x7FF) {
    out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp <= 0xFFFF) {
    out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | ((cp >> 18) & 0x07)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

uint32_t ByteToCodepoint(uint8_t b) { return GetByteMap().to_cp[b]; }

std::string_view ByteToUtf8(uint8_t b) { return GetByteMap().to_utf8[b]; }

int CodepointToByte(uint32_t cp) {
  if (cp >= 512) return -1;
  return GetByteMap().from_cp[cp];
}

}  // namespace kiln::unicode
