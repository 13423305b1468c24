#include "tokenizer/jinja/text.h"

#include <utf8proc.h>

#include <algorithm>

namespace kiln::jinja::text {
namespace {

// Invalid bytes decode to lone surrogates U+DC80..U+DCFF and encode back to the byte.
constexpr char32_t kEscapeBase = 0xDC00;

bool IsEscape(char32_t c) { return c >= 0xDC80 && c <= 0xDCFF; }

// Length of the valid UTF-8 sequence at s[i], or 0 when the byte there starts none.
size_t SequenceLength(std::string_view s, size_t i, char32_t* cp) {
  auto b = [&](size_t k) { return static_cast<unsigned char>(s[i + k]); };
  unsigned char c = b(0);
  if (c < 0x80) return *cp = c, 1;
  size_t n = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC2 ? 2 : 0;
  if (n == 0 || c > 0xF4 || i + n > s.size()) return 0;
  char32_t v = c & (0x7F >> n);
  for (size_t k = 1; k < n; ++k) {
    if ((b(k) & 0xC0) != 0x80) return 0;
    v = (v << 6) | (b(k) & 0x3F);
  }
  bool overlong = (n == 3 && v < 0x800) || (n == 4 && v < 0x10000);
  if (overlong || v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF)) return 0;
  *cp = v;
  return n;
}

utf8proc_category_t Category(char32_t c) {
  return utf8proc_category(static_cast<utf8proc_int32_t>(c));
}

template <typename Fn>
std::string MapCodePoints(std::string_view s, Fn fn) {
  if (IsAscii(s)) {
    std::string out(s);
    for (char& ch : out) ch = static_cast<char>(fn(static_cast<unsigned char>(ch)));
    return out;
  }
  std::u32string cps = Decode(s);
  for (char32_t& c : cps) c = fn(c);
  return Encode(cps);
}

bool InSet(char32_t c, std::u32string_view set) { return set.find(c) != std::u32string_view::npos; }

}  // namespace

std::u32string Decode(std::string_view s) {
  std::u32string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    char32_t cp = 0;
    size_t n = SequenceLength(s, i, &cp);
    if (n == 0) {
      out.push_back(kEscapeBase + static_cast<unsigned char>(s[i]));
      ++i;
    } else {
      out.push_back(cp);
      i += n;
    }
  }
  return out;
}

void AppendUtf8(std::string& out, char32_t cp) {
  if (IsEscape(cp)) {
    out.push_back(static_cast<char>(cp - kEscapeBase));
  } else if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

std::string Encode(std::u32string_view cps) {
  std::string out;
  out.reserve(cps.size());
  for (char32_t c : cps) AppendUtf8(out, c);
  return out;
}

size_t Length(std::string_view s) {
  if (IsAscii(s)) return s.size();
  return Decode(s).size();
}

bool IsAscii(std::string_view s) {
  return std::all_of(s.begin(), s.end(), [](char c) { return (c & 0x80) == 0; });
}

bool IsSpace(char32_t c) {
  if (c < 0x80) return (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20);
  return c == 0x85 || c == 0xA0 || c == 0x1680 || (c >= 0x2000 && c <= 0x200A) || c == 0x2028 ||
         c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

bool IsPrintable(char32_t c) {
  if (c == ' ') return true;
  if (IsEscape(c) || c > 0x10FFFF) return false;
  switch (Category(c)) {
    case UTF8PROC_CATEGORY_CC:
    case UTF8PROC_CATEGORY_CF:
    case UTF8PROC_CATEGORY_CS:
    case UTF8PROC_CATEGORY_CO:
    case UTF8PROC_CATEGORY_CN:
    case UTF8PROC_CATEGORY_ZS:
    case UTF8PROC_CATEGORY_ZL:
    case UTF8PROC_CATEGORY_ZP:
      return false;
    default:
      return true;
  }
}

bool IsAlpha(char32_t c) {
  if (c < 0x80) return (c | 0x20) >= 'a' && (c | 0x20) <= 'z';
  auto cat = Category(c);
  return cat >= UTF8PROC_CATEGORY_LU && cat <= UTF8PROC_CATEGORY_LO;
}

bool IsDigit(char32_t c) {
  if (c < 0x80) return c >= '0' && c <= '9';
  return Category(c) == UTF8PROC_CATEGORY_ND;
}

bool IsAlnum(char32_t c) {
  if (IsAlpha(c)) return true;
  auto cat = Category(c);
  return cat == UTF8PROC_CATEGORY_ND || cat == UTF8PROC_CATEGORY_NL || cat == UTF8PROC_CATEGORY_NO;
}

bool IsLower(char32_t c) {
  return c < 0x80 ? (c >= 'a' && c <= 'z') : Category(c) == UTF8PROC_CATEGORY_LL;
}
bool IsUpper(char32_t c) {
  return c < 0x80 ? (c >= 'A' && c <= 'Z') : Category(c) == UTF8PROC_CATEGORY_LU;
}
bool IsCased(char32_t c) {
  return IsLower(c) || IsUpper(c) || (c >= 0x80 && Category(c) == UTF8PROC_CATEGORY_LT);
}

char32_t ToUpper(char32_t c) {
  if (c < 0x80) return (c >= 'a' && c <= 'z') ? c - 32 : c;
  if (IsEscape(c)) return c;
  return static_cast<char32_t>(utf8proc_toupper(static_cast<utf8proc_int32_t>(c)));
}

char32_t ToLower(char32_t c) {
  if (c < 0x80) return (c >= 'A' && c <= 'Z') ? c + 32 : c;
  if (IsEscape(c)) return c;
  return static_cast<char32_t>(utf8proc_tolower(static_cast<utf8proc_int32_t>(c)));
}

char32_t ToTitle(char32_t c) {
  if (c < 0x80 || IsEscape(c)) return ToUpper(c);
  return static_cast<char32_t>(utf8proc_totitle(static_cast<utf8proc_int32_t>(c)));
}

namespace {

// Python's full case mappings (SpecialCasing.txt) where they differ from the simple ones
// utf8proc gives: one code point becomes several.
struct SpecialCase {
  char32_t c;
  const char32_t* upper;
  const char32_t* title;
  const char32_t* lower;
};
constexpr SpecialCase kSpecialCases[] = {
    {0x00DF, U"SS", U"Ss", nullptr},         // ß
    {0x0130, nullptr, nullptr, U"i\u0307"},  // İ
    {0xFB00, U"FF", U"Ff", nullptr},        {0xFB01, U"FI", U"Fi", nullptr},
    {0xFB02, U"FL", U"Fl", nullptr},        {0xFB03, U"FFI", U"Ffi", nullptr},
    {0xFB04, U"FFL", U"Ffl", nullptr},      {0xFB05, U"ST", U"St", nullptr},
    {0xFB06, U"ST", U"St", nullptr},
};

enum class Case { kUpper, kTitle, kLower };

void AppendCased(std::u32string& out, char32_t c, Case which) {
  if (c >= 0x80) {
    for (const SpecialCase& sc : kSpecialCases) {
      if (sc.c != c) continue;
      const char32_t* m = which == Case::kUpper   ? sc.upper
                          : which == Case::kTitle ? sc.title
                                                  : sc.lower;
      if (m) {
        out.append(m);
        return;
      }
    }
  }
  out.push_back(which == Case::kUpper   ? ToUpper(c)
                : which == Case::kTitle ? ToTitle(c)
                                        : ToLower(c));
}

std::string MapCase(std::string_view s, Case which) {
  if (IsAscii(s)) return MapCodePoints(s, which == Case::kLower ? ToLower : ToUpper);
  std::u32string out;
  for (char32_t c : Decode(s)) AppendCased(out, c, which);
  return Encode(out);
}

}  // namespace

std::string Upper(std::string_view s) { return MapCase(s, Case::kUpper); }
std::string Lower(std::string_view s) { return MapCase(s, Case::kLower); }

std::string Capitalize(std::string_view s) {
  std::u32string out;
  bool first = true;
  for (char32_t c : Decode(s)) {
    AppendCased(out, c, first ? Case::kTitle : Case::kLower);
    first = false;
  }
  return Encode(out);
}

std::string Title(std::string_view s) {
  std::u32string out;
  bool prev_cased = false;
  for (char32_t c : Decode(s)) {
    AppendCased(out, c, prev_cased ? Case::kLower : Case::kTitle);
    prev_cased = IsCased(c);
  }
  return Encode(out);
}

std::string JinjaTitle(std::string_view s) {
  std::u32string out;
  bool word_start = true;
  for (char32_t c : Decode(s)) {
    bool separator = IsSpace(c) || InSet(c, U"-({[<");
    if (separator) {
      out.push_back(c);
      word_start = true;
    } else {
      AppendCased(out, c, word_start ? Case::kUpper : Case::kLower);
      word_start = false;
    }
  }
  return Encode(out);
}

std::string Strip(std::string_view s, const std::optional<std::string>& chars, bool left,
                  bool right) {
  std::u32string cps = Decode(s);
  std::u32string set = chars ? Decode(*chars) : std::u32string();
  auto strip = [&](char32_t c) { return chars ? InSet(c, set) : IsSpace(c); };
  size_t begin = 0, end = cps.size();
  if (left)
    while (begin < end && strip(cps[begin])) ++begin;
  if (right)
    while (end > begin && strip(cps[end - 1])) --end;
  return Encode(std::u32string_view(cps).substr(begin, end - begin));
}

namespace {

std::vector<std::string> SplitOnWhitespace(std::string_view s, int64_t maxsplit, bool from_right) {
  std::u32string cps = Decode(s);
  if (from_right) std::reverse(cps.begin(), cps.end());
  std::vector<std::string> out;
  size_t i = 0, n = cps.size();
  while (true) {
    while (i < n && IsSpace(cps[i])) ++i;
    if (i == n) break;
    // Past maxsplit the rest (from its first non-space) is one last part, as in CPython.
    bool last = maxsplit >= 0 && static_cast<int64_t>(out.size()) == maxsplit;
    size_t j = i;
    while (j < n && (last || !IsSpace(cps[j]))) ++j;
    std::u32string part = cps.substr(i, j - i);
    if (from_right) std::reverse(part.begin(), part.end());
    out.push_back(Encode(part));
    i = j;
  }
  if (from_right) std::reverse(out.begin(), out.end());
  return out;
}

}  // namespace

std::vector<std::string> Split(std::string_view s, const std::optional<std::string>& sep,
                               int64_t maxsplit, bool from_right) {
  if (!sep) return SplitOnWhitespace(s, maxsplit, from_right);
  std::vector<std::string> out;
  std::string_view rest = s;
  while (maxsplit < 0 || static_cast<int64_t>(out.size()) < maxsplit) {
    size_t at = from_right ? rest.rfind(*sep) : rest.find(*sep);
    if (at == std::string_view::npos) break;
    if (from_right) {
      out.emplace_back(rest.substr(at + sep->size()));
      rest = rest.substr(0, at);
    } else {
      out.emplace_back(rest.substr(0, at));
      rest = rest.substr(at + sep->size());
    }
  }
  out.emplace_back(rest);
  if (from_right) std::reverse(out.begin(), out.end());
  return out;
}

std::vector<std::string> SplitLines(std::string_view s, bool keepends) {
  std::u32string cps = Decode(s);
  std::vector<std::string> out;
  size_t start = 0, i = 0;
  while (i < cps.size()) {
    char32_t c = cps[i];
    bool brk = c == '\n' || c == '\r' || c == 0x0B || c == 0x0C || (c >= 0x1C && c <= 0x1E) ||
               c == 0x85 || c == 0x2028 || c == 0x2029;
    if (!brk) {
      ++i;
      continue;
    }
    size_t eol = i + ((c == '\r' && i + 1 < cps.size() && cps[i + 1] == '\n') ? 2 : 1);
    out.push_back(Encode(std::u32string_view(cps).substr(start, (keepends ? eol : i) - start)));
    start = i = eol;
  }
  if (start < cps.size()) out.push_back(Encode(std::u32string_view(cps).substr(start)));
  return out;
}

std::string Replace(std::string_view s, std::string_view old, std::string_view repl,
                    int64_t count) {
  std::string out;
  if (old.empty()) {  // Python inserts `repl` around every code point
    std::u32string cps = Decode(s);
    int64_t done = 0;
    for (size_t i = 0; i <= cps.size(); ++i) {
      if (count < 0 || done < count) out += repl, ++done;
      if (i < cps.size()) AppendUtf8(out, cps[i]);
    }
    return out;
  }
  size_t pos = 0;
  for (int64_t done = 0; count < 0 || done < count; ++done) {
    size_t at = s.find(old, pos);
    if (at == std::string_view::npos) break;
    out.append(s.substr(pos, at - pos)).append(repl);
    pos = at + old.size();
  }
  out.append(s.substr(pos));
  return out;
}

int64_t Count(std::string_view s, std::string_view sub) {
  if (sub.empty()) return static_cast<int64_t>(Length(s)) + 1;
  int64_t n = 0;
  for (size_t at = s.find(sub); at != std::string_view::npos; at = s.find(sub, at + sub.size())) {
    ++n;
  }
  return n;
}

int64_t Find(std::string_view s, std::string_view sub, bool from_right) {
  size_t at = from_right ? s.rfind(sub) : s.find(sub);
  if (at == std::string_view::npos) return -1;
  return static_cast<int64_t>(Length(s.substr(0, at)));
}

}  // namespace kiln::jinja::text
