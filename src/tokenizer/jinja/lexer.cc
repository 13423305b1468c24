#include "tokenizer/jinja/lexer.h"

#include <charconv>
#include <cstring>

#include "tokenizer/jinja/error.h"
#include "tokenizer/jinja/text.h"

namespace kiln::jinja {
namespace {

bool IsSpaceByte(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}
bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool IsNameStart(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool IsNameChar(char c) { return IsNameStart(c) || IsDigit(c); }

// Python's str.rstrip() of whitespace, by code point.
std::string_view RStripWhitespace(std::string_view s) {
  std::string stripped = text::Strip(s, std::nullopt, false, true);
  return s.substr(0, stripped.size());
}

bool AllWhitespace(std::string_view s) {
  std::u32string cps = text::Decode(s);
  for (char32_t c : cps) {
    if (!text::IsSpace(c)) return false;
  }
  return !cps.empty();
}

// Jinja normalizes \r\n and \r to \n and drops one trailing newline (keep_trailing_newline=False).
std::string Normalize(std::string_view source) {
  std::string out;
  out.reserve(source.size());
  for (size_t i = 0; i < source.size(); ++i) {
    if (source[i] == '\r') {
      out += '\n';
      if (i + 1 < source.size() && source[i + 1] == '\n') ++i;
    } else {
      out += source[i];
    }
  }
  if (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

int HexValue(char c) {
  if (IsDigit(c)) return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

class Lexer {
 public:
  Lexer(std::string_view source, const LexerOptions& o) : src_(Normalize(source)), o_(o) {}

  std::vector<Token> Run() {
    while (pos_ < src_.size()) {
      size_t at = FindTagStart(pos_);
      if (at == std::string::npos) {
        EmitData(std::string_view(src_).substr(pos_), src_.size());
        break;
      }
      LexTag(at);
    }
    Push(Tok::kEof, "");
    return std::move(tokens_);
  }

 private:
  size_t FindTagStart(size_t from) const {
    for (size_t i = src_.find('{', from); i != std::string::npos; i = src_.find('{', i + 1)) {
      if (i + 1 < src_.size() && std::strchr("{%#", src_[i + 1])) return i;
    }
    return std::string::npos;
  }

  [[noreturn]] void Error(const std::string& message) const { throw TemplateError(message, line_); }

  void Push(Tok type, std::string text) {
    Token t;
    t.type = type;
    t.text = std::move(text);
    t.line = line_;
    tokens_.push_back(std::move(t));
  }

  // Moves pos_ to `to`, counting the newlines passed.
  void Advance(size_t to) {
    for (size_t i = pos_; i < to; ++i) line_ += src_[i] == '\n';
    pos_ = to;
    line_starting_ = to > 0 && src_[to - 1] == '\n';
  }

  void EmitData(std::string_view data, size_t end) {
    if (!data.empty()) Push(Tok::kData, std::string(data));
    Advance(end);
  }

  // Text before a tag, after {%- stripping or lstrip_blocks.
  std::string_view StripBefore(std::string_view data, char sign, bool is_variable) const {
    if (sign == '-') return RStripWhitespace(data);
    if (sign == '+' || !o_.lstrip_blocks || is_variable) return data;
    size_t line_start = data.rfind('\n');
    line_start = line_start == std::string_view::npos ? 0 : line_start + 1;
    if ((line_start > 0 || line_starting_) && AllWhitespace(data.substr(line_start))) {
      return data.substr(0, line_start);
    }
    return data;
  }

  char SignAt(size_t i) const {
    return i < src_.size() && (src_[i] == '-' || src_[i] == '+') ? src_[i] : 0;
  }

  // After a closing tag: -%} eats all following whitespace, %} one newline with trim_blocks.
  size_t SkipAfterEnd(size_t after, char sign, bool trims_newline) const {
    if (sign == '-') {
      while (after < src_.size() && IsSpaceByte(src_[after])) ++after;
    } else if (sign != '+' && trims_newline && after < src_.size() && src_[after] == '\n') {
      ++after;
    }
    return after;
  }

  void LexTag(size_t at) {
    char kind = src_[at + 1];
    char sign = SignAt(at + 2);
    size_t inner = at + 2 + (sign ? 1 : 0);
    std::string_view before(src_.data() + pos_, at - pos_);
    size_t raw_end = kind == '%' ? RawTagEnd(inner) : 0;
    Push(Tok::kData, "");
    tokens_.back().text = std::string(StripBefore(before, sign, kind == '{'));
    if (tokens_.back().text.empty()) tokens_.pop_back();
    Advance(at);
    if (kind == '#') return LexComment(inner);
    if (raw_end) return LexRaw(raw_end);
    Advance(inner);
    Push(kind == '{' ? Tok::kVarBegin : Tok::kBlockBegin, "");
    LexExpression(kind == '{');
  }

  // If {% raw %} starts at `inner`, the position after its closing %} (and -%} whitespace).
  size_t RawTagEnd(size_t i) const {
    while (i < src_.size() && IsSpaceByte(src_[i])) ++i;
    if (src_.compare(i, 3, "raw") != 0 || (i + 3 < src_.size() && IsNameChar(src_[i + 3])))
      return 0;
    i += 3;
    while (i < src_.size() && IsSpaceByte(src_[i])) ++i;
    char sign = src_[i] == '-' ? '-' : 0;
    if (src_.compare(i + (sign ? 1 : 0), 2, "%}") != 0) return 0;
    return SkipAfterEnd(i + (sign ? 3 : 2), sign, false);
  }

  void LexComment(size_t inner) {
    size_t end = src_.find("#}", inner);
    if (end == std::string::npos) Error("Missing end of comment tag");
    char sign = end > inner ? SignAt(end - 1) : 0;
    Advance(SkipAfterEnd(end + 2, sign, o_.trim_blocks));
  }

  void LexRaw(size_t body) {
    Advance(body);
    for (size_t at = src_.find("{%", body); at != std::string::npos; at = src_.find("{%", at + 2)) {
      char sign = SignAt(at + 2);
      size_t i = at + 2 + (sign ? 1 : 0);
      while (i < src_.size() && IsSpaceByte(src_[i])) ++i;
      if (src_.compare(i, 6, "endraw") != 0) continue;
      i += 6;
      while (i < src_.size() && IsSpaceByte(src_[i])) ++i;
      char end_sign = SignAt(i);
      if (src_.compare(i + (end_sign ? 1 : 0), 2, "%}") != 0) continue;
      std::string_view content(src_.data() + body, at - body);
      std::string data(StripBefore(content, sign, false));
      if (!data.empty()) Push(Tok::kData, std::move(data));
      Advance(SkipAfterEnd(i + (end_sign ? 3 : 2), end_sign, o_.trim_blocks));
      return;
    }
    Error("Missing end of raw directive");
  }

  // Tokens inside {{ }} or {% %} up to the closing delimiter (only when brackets balance).
  void LexExpression(bool variable) {
    const char* close = variable ? "}}" : "%}";
    while (true) {
      while (pos_ < src_.size() && IsSpaceByte(src_[pos_])) Advance(pos_ + 1);
      if (pos_ >= src_.size())
        Error(variable ? "unexpected end of template, expected '}}'"
                       : "unexpected end of template, expected '%}'");
      if (brackets_.empty()) {
        char sign = SignAt(pos_);
        if (sign && (!variable || sign == '-') && src_.compare(pos_ + 1, 2, close) == 0) {
          Push(variable ? Tok::kVarEnd : Tok::kBlockEnd, "");
          Advance(SkipAfterEnd(pos_ + 3, sign, !variable && o_.trim_blocks));
          return;
        }
        if (src_.compare(pos_, 2, close) == 0) {
          Push(variable ? Tok::kVarEnd : Tok::kBlockEnd, "");
          Advance(SkipAfterEnd(pos_ + 2, 0, !variable && o_.trim_blocks));
          return;
        }
      }
      LexToken();
    }
  }

  void LexToken() {
    char c = src_[pos_];
    if (IsDigit(c)) return LexNumber();
    if (IsNameStart(c)) {
      size_t end = pos_;
      while (end < src_.size() && IsNameChar(src_[end])) ++end;
      Push(Tok::kName, src_.substr(pos_, end - pos_));
      return Advance(end);
    }
    if (c == '\'' || c == '"') return LexString();
    LexOperator();
  }

  void LexOperator() {
    static const char* kOps[] = {"//", "**", "==", "!=", ">=", "<=", "+", "-", "/",
                                 "*",  "%",  "~",  "[",  "]",  "(",  ")", "{", "}",
                                 "=",  ">",  "<",  ".",  ":",  "|",  ",", ";"};
    for (const char* op : kOps) {
      size_t n = std::strlen(op);
      if (src_.compare(pos_, n, op) != 0) continue;
      Balance(op[0]);
      Push(Tok::kOp, op);
      return Advance(pos_ + n);
    }
    Error(std::string("unexpected char '") + src_[pos_] + "'");
  }

  void Balance(char c) {
    static const char* kOpen = "([{";
    static const char* kClose = ")]}";
    if (std::strchr(kOpen, c)) {
      brackets_.push_back(c);
    } else if (const char* p = std::strchr(kClose, c)) {
      char want = kOpen[p - kClose];
      if (brackets_.empty() || brackets_.back() != want)
        Error(std::string("unexpected '") + c + "'");
      brackets_.pop_back();
    }
  }

  size_t ScanDigits(size_t i, int (*digit)(char)) const {  // (\d+_)*\d+ style runs
    size_t start = i;
    while (i < src_.size() &&
           (digit(src_[i]) >= 0 ||
            (src_[i] == '_' && i > start && i + 1 < src_.size() && digit(src_[i + 1]) >= 0)))
      ++i;
    return i;
  }

  static int Dec(char c) { return IsDigit(c) ? c - '0' : -1; }

  void LexNumber() {
    bool after_dot = pos_ > 0 && src_[pos_ - 1] == '.';
    size_t end = ScanDigits(pos_, Dec);
    bool is_float = false;
    if (!after_dot) {
      if (end + 1 < src_.size() && src_[end] == '.' && IsDigit(src_[end + 1])) {
        end = ScanDigits(end + 1, Dec);
        is_float = true;
      }
      if (end < src_.size() && (src_[end] == 'e' || src_[end] == 'E')) {
        size_t e = end + 1;
        if (e < src_.size() && (src_[e] == '+' || src_[e] == '-')) ++e;
        if (e < src_.size() && IsDigit(src_[e])) end = ScanDigits(e, Dec), is_float = true;
      }
    }
    std::string digits;
    for (size_t i = pos_; i < end; ++i) {
      if (src_[i] != '_') digits += src_[i];
    }
    if (is_float) {
      Push(Tok::kFloat, digits);
      std::from_chars(digits.data(), digits.data() + digits.size(), tokens_.back().float_value);
      return Advance(end);
    }
    LexInteger();
  }

  void LexInteger() {
    int base = 10;
    size_t start = pos_;
    if (src_[pos_] == '0' && pos_ + 1 < src_.size()) {
      char p = src_[pos_ + 1] | 0x20;
      base = p == 'x' ? 16 : p == 'o' ? 8 : p == 'b' ? 2 : 10;
      if (base != 10) start += 2;
    }
    size_t end = start;
    std::string digits;
    while (end < src_.size() && (HexValue(src_[end]) >= 0 || src_[end] == '_')) {
      if (src_[end] != '_') {
        if (HexValue(src_[end]) >= base) break;
        digits += src_[end];
      }
      ++end;
    }
    if (base == 10 && src_[pos_] == '0') {  // "0" or "00": a leading zero starts no other number
      end = pos_ + 1;
      while (end < src_.size() && (src_[end] == '0' || src_[end] == '_')) ++end;
      digits = "0";
    }
    if (digits.empty()) Error("invalid integer literal");
    Push(Tok::kInt, digits);
    auto res = std::from_chars(digits.data(), digits.data() + digits.size(),
                               tokens_.back().int_value, base);
    if (res.ec != std::errc()) Error("integer literal too large: " + digits);
    Advance(end);
  }

  void LexString() {
    char quote = src_[pos_];
    size_t i = pos_ + 1;
    std::string value;
    while (true) {
      if (i >= src_.size()) Error("unexpected end of string");
      char c = src_[i];
      if (c == quote) break;
      if (c != '\\') {
        value += c;
        ++i;
        continue;
      }
      i = Escape(i + 1, value);
    }
    Push(Tok::kString, std::move(value));
    Advance(i + 1);
  }

  // Python's unicode-escape for the escape whose letter is at src_[i]; returns the next index.
  size_t Escape(size_t i, std::string& out) {
    if (i >= src_.size()) Error("unexpected end of string");
    char c = src_[i];
    static const char* kSimple = "\\'\"abfnrtv";
    static const char* kValues = "\\'\"\a\b\f\n\r\t\v";
    if (const char* p = std::strchr(kSimple, c); p && c) {
      out += kValues[p - kSimple];
      return i + 1;
    }
    if (c == '\n') return i + 1;  // line continuation
    if (c >= '0' && c <= '7') {
      unsigned v = 0;
      size_t n = 0;
      while (n < 3 && i + n < src_.size() && src_[i + n] >= '0' && src_[i + n] <= '7')
        v = v * 8 + (src_[i + n++] - '0');
      text::AppendUtf8(out, v);
      return i + n;
    }
    int width = c == 'x' ? 2 : c == 'u' ? 4 : c == 'U' ? 8 : 0;
    if (width == 0) {  // unknown escapes stay as written
      out += '\\';
      return i;
    }
    char32_t v = 0;
    for (int k = 1; k <= width; ++k) {
      int h = i + k < src_.size() ? HexValue(src_[i + k]) : -1;
      if (h < 0) Error(std::string("truncated \\") + c + " escape");
      v = v * 16 + static_cast<char32_t>(h);
    }
    if (v > 0x10FFFF) Error("illegal Unicode character in escape");
    text::AppendUtf8(out, v);
    return i + 1 + width;
  }

  std::string src_;
  const LexerOptions& o_;
  size_t pos_ = 0;
  int line_ = 1;
  bool line_starting_ = true;
  std::vector<char> brackets_;
  std::vector<Token> tokens_;
};

}  // namespace

std::vector<Token> Tokenize(std::string_view source, const LexerOptions& options) {
  return Lexer(source, options).Run();
}

}  // namespace kiln::jinja
