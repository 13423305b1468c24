#include "grammar/regex_compiler.h"

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "util/error.h"

namespace kiln::grammar {
namespace {

constexpr int kMaxDepth = 200;
constexpr int kMaxRepeat = 10000;
constexpr uint32_t kMaxCodepoint = 0x10FFFF;

using Ranges = std::vector<CodepointRange>;

struct Node {
  enum Kind { kSet, kConcat, kAlternate, kRepeat } kind = kConcat;  // no children: ""
  Ranges set;
  std::vector<std::unique_ptr<Node>> children;
  int min = 0, max = -1;  // kRepeat; max -1: unbounded
};

std::unique_ptr<Node> MakeSet(Ranges r) {
  auto n = std::make_unique<Node>();
  n->kind = Node::kSet;
  n->set = std::move(r);
  return n;
}

Ranges Normalized(Ranges r) {
  std::sort(r.begin(), r.end(), [](auto& a, auto& b) { return a.lo < b.lo; });
  Ranges out;
  for (const CodepointRange& x : r) {
    if (!out.empty() && x.lo <= out.back().hi + 1) {
      out.back().hi = std::max(out.back().hi, x.hi);
    } else {
      out.push_back(x);
    }
  }
  return out;
}

Ranges Complement(const Ranges& r) {
  Ranges out;
  uint32_t next = 0;
  for (const CodepointRange& x : Normalized(r)) {
    if (x.lo > next) out.push_back({next, x.lo - 1});
    next = x.hi + 1;
  }
  if (next <= kMaxCodepoint) out.push_back({next, kMaxCodepoint});
  return out;
}

const Ranges kDigit = {{'0', '9'}};
const Ranges kWord = {{'0', '9'}, {'A', 'Z'}, {'_', '_'}, {'a', 'z'}};
const Ranges kSpace = {{'\t', '\r'}, {' ', ' '}};

class Parser {
 public:
  explicit Parser(std::string_view p) : p_(p) {}

  std::unique_ptr<Node> Parse() {
    if (Peek('^')) ++pos_;
    auto root = ParseAlternation(0);
    if (pos_ < p_.size()) Fail(p_[pos_] == ')' ? "unbalanced `)`" : "unexpected character");
    return root;
  }

 private:
  [[noreturn]] void Fail(std::string_view what) const {
    throw Error(StrCat("invalid regex at offset ", pos_, ": ", what));
  }
  bool Peek(char c) const { return pos_ < p_.size() && p_[pos_] == c; }
  bool AtEnd() const { return pos_ >= p_.size(); }

  uint32_t NextCodepoint() {
    const auto b = static_cast<uint8_t>(p_[pos_]);
    int n = b < 0x80 ? 1 : (b >> 5) == 6 ? 2 : (b >> 4) == 14 ? 3 : (b >> 3) == 30 ? 4 : 0;
    if (n == 0 || pos_ + n > p_.size()) Fail("invalid UTF-8");
    uint32_t c = n == 1 ? b : b & (0x7F >> n);
    for (int i = 1; i < n; ++i) {
      const auto cont = static_cast<uint8_t>(p_[pos_ + i]);
      if ((cont & 0xC0) != 0x80) Fail("invalid UTF-8");
      c = (c << 6) | (cont & 0x3F);
    }
    pos_ += n;
    return c;
  }

  std::unique_ptr<Node> ParseAlternation(int depth) {
    if (depth > kMaxDepth) Fail("groups nested too deeply");
    std::vector<std::unique_ptr<Node>> options;
    options.push_back(ParseConcat(depth));
    while (Peek('|')) {
      ++pos_;
      options.push_back(ParseConcat(depth));
    }
    if (options.size() == 1) return std::move(options[0]);
    auto n = std::make_unique<Node>();
    n->kind = Node::kAlternate;
    n->children = std::move(options);
    return n;
  }

  std::unique_ptr<Node> ParseConcat(int depth) {
    auto n = std::make_unique<Node>();
    n->kind = Node::kConcat;
    while (!AtEnd() && !Peek('|') && !Peek(')')) {
      if (Peek('$')) {
        ++pos_;
        if (!AtEnd()) Fail("`$` is only supported at the end of the pattern");
        break;
      }
      auto atom = ParseAtom(depth);
      n->children.push_back(ParseQuantifiers(std::move(atom)));
    }
    return n;
  }

  std::unique_ptr<Node> ParseQuantifiers(std::unique_ptr<Node> atom) {
    for (int stacked = 0; !AtEnd(); ++stacked) {
      // Each quantifier wraps the last: bound the nesting the build recurses through.
      if (stacked == 8) Fail("more than 8 quantifiers in a row");
      int min = 0, max = -1;
      const char c = p_[pos_];
      if (c == '*') {
        ++pos_;
      } else if (c == '+') {
        min = 1, ++pos_;
      } else if (c == '?') {
        max = 1, ++pos_;
      } else if (c == '{' && ParseCount(min, max)) {
      } else {
        break;
      }
      if (Peek('?')) ++pos_;  // lazy: same language under a full match
      if (Peek('+')) Fail("possessive quantifiers are not supported");
      auto r = std::make_unique<Node>();
      r->kind = Node::kRepeat;
      r->min = min, r->max = max;
      r->children.push_back(std::move(atom));
      atom = std::move(r);
    }
    return atom;
  }

  // `{n}`, `{n,}`, `{n,m}` at pos_; false (pos_ unchanged) when `{` is a literal brace.
  bool ParseCount(int& min, int& max) {
    size_t i = pos_ + 1;
    auto number = [&](int& out) {
      const size_t begin = i;
      long v = 0;
      while (i < p_.size() && p_[i] >= '0' && p_[i] <= '9') {
        v = std::min<long>(v * 10 + (p_[i] - '0'), kMaxRepeat + 1L);
        ++i;
      }
      out = static_cast<int>(v);
      return i > begin;
    };
    if (!number(min)) return false;
    max = min;
    if (i < p_.size() && p_[i] == ',') {
      ++i;
      if (!number(max)) max = -1;
    }
    if (i >= p_.size() || p_[i] != '}') return false;
    pos_ = i + 1;
    if (min > kMaxRepeat || max > kMaxRepeat) Fail("repetition count over 10000");
    if (max != -1 && max < min) Fail("repetition `{n,m}` with m < n");
    return true;
  }

  std::unique_ptr<Node> ParseAtom(int depth) {
    const char c = p_[pos_];
    switch (c) {
      case '(':
        return ParseGroup(depth);
      case '[':
        return MakeSet(ParseClass());
      case '.':
        ++pos_;
        return MakeSet(Complement({{'\n', '\n'}}));
      case '\\':
        return MakeSet(ParseEscape(false));
      case '*':
      case '+':
      case '?':
        Fail("nothing to repeat");
      case '^':
        Fail("`^` is only supported at the start of the pattern");
      default: {
        const uint32_t cp = NextCodepoint();
        return MakeSet({{cp, cp}});
      }
    }
  }

  std::unique_ptr<Node> ParseGroup(int depth) {
    ++pos_;  // (
    if (Peek('?')) {
      const std::string_view rest = p_.substr(pos_);
      if (rest.starts_with("?:")) {
        pos_ += 2;
      } else if (rest.starts_with("?P<") ||
                 (rest.starts_with("?<") && rest.size() > 2 && rest[2] != '=' && rest[2] != '!')) {
        const size_t close = p_.find('>', pos_);
        if (close == std::string_view::npos) Fail("unterminated group name");
        pos_ = close + 1;
      } else if (rest.starts_with("?=") || rest.starts_with("?!") || rest.starts_with("?<=") ||
                 rest.starts_with("?<!")) {
        Fail("lookahead and lookbehind are not supported");
      } else if (rest.starts_with("?P=")) {
        Fail("backreferences are not supported");
      } else {
        Fail("inline flags and other `(?` groups are not supported");
      }
    }
    auto inner = ParseAlternation(depth + 1);
    if (!Peek(')')) Fail("missing `)`");
    ++pos_;
    return inner;
  }

  Ranges ParseClass() {
    ++pos_;  // [
    bool negate = false;
    if (Peek('^')) negate = true, ++pos_;
    Ranges r;
    bool first = true;
    while (true) {
      if (AtEnd()) Fail("missing `]`");
      if (Peek(']') && !first) break;
      first = false;
      uint32_t lo;
      if (Peek('\\')) {
        Ranges e = ParseEscape(true);
        if (e.size() != 1 || e[0].lo != e[0].hi) {  // \d, \w, \s: a set, not a range end
          r.insert(r.end(), e.begin(), e.end());
          continue;
        }
        lo = e[0].lo;
      } else {
        if (Peek('[') && p_.substr(pos_).starts_with("[:")) Fail("POSIX classes are not supported");
        lo = NextCodepoint();
      }
      uint32_t hi = lo;
      if (Peek('-') && pos_ + 1 < p_.size() && p_[pos_ + 1] != ']') {
        ++pos_;
        if (Peek('\\')) {
          Ranges e = ParseEscape(true);
          if (e.size() != 1 || e[0].lo != e[0].hi) Fail("a class cannot end a range");
          hi = e[0].lo;
        } else {
          hi = NextCodepoint();
        }
        if (hi < lo) Fail("range out of order in a character class");
      }
      r.push_back({lo, hi});
    }
    ++pos_;  // ]
    return negate ? Complement(r) : Normalized(r);
  }

  uint32_t ParseHex(int digits) {
    if (pos_ + digits > p_.size()) Fail("truncated hex escape");
    uint32_t v = 0;
    for (int i = 0; i < digits; ++i) {
      const char h = p_[pos_++];
      int d = h >= '0' && h <= '9'   ? h - '0'
              : h >= 'a' && h <= 'f' ? h - 'a' + 10
              : h >= 'A' && h <= 'F' ? h - 'A' + 10
                                     : -1;
      if (d < 0) Fail("bad hex digit in an escape");
      v = v * 16 + static_cast<uint32_t>(d);
    }
    return v;
  }

  Ranges ParseEscape(bool in_class) {
    ++pos_;  // backslash
    if (AtEnd()) Fail("trailing backslash");
    const char c = p_[pos_];
    auto one = [](uint32_t cp) { return Ranges{{cp, cp}}; };
    switch (c) {
      case 'd':
        ++pos_;
        return kDigit;
      case 'D':
        ++pos_;
        return Complement(kDigit);
      case 'w':
        ++pos_;
        return kWord;
      case 'W':
        ++pos_;
        return Complement(kWord);
      case 's':
        ++pos_;
        return kSpace;
      case 'S':
        ++pos_;
        return Complement(kSpace);
      case 'n':
        ++pos_;
        return one('\n');
      case 't':
        ++pos_;
        return one('\t');
      case 'r':
        ++pos_;
        return one('\r');
      case 'f':
        ++pos_;
        return one('\f');
      case 'v':
        ++pos_;
        return one('\v');
      case '0':
        ++pos_;
        return one(0);
      case 'x':
        ++pos_;
        return one(ParseHex(2));
      case 'u':
        ++pos_;
        return one(ParseHex(4));
      case 'b':
        if (in_class) return ++pos_, one('\b');
        Fail("word boundaries (`\\b`) are not supported");
      case 'B':
      case 'A':
      case 'Z':
      case 'z':
      case 'G':
        Fail("anchors and boundaries other than a leading `^` and a final `$` are not supported");
      case 'p':
      case 'P':
        Fail("Unicode property classes (`\\p{...}`) are not supported");
      default:
        if (c >= '1' && c <= '9') Fail("backreferences are not supported");
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) Fail("unknown escape");
        return one(NextCodepoint());
    }
  }

  std::string_view p_;
  size_t pos_ = 0;
};

Fragment Build(const Node& n, ByteNfa& nfa) {
  switch (n.kind) {
    case Node::kSet:
      return nfa.Codepoints(n.set);
    case Node::kConcat: {
      if (n.children.empty()) return nfa.Empty();
      Fragment f = Build(*n.children[0], nfa);
      for (size_t i = 1; i < n.children.size(); ++i) f = nfa.Concat(f, Build(*n.children[i], nfa));
      return f;
    }
    case Node::kAlternate: {
      std::vector<Fragment> options;
      for (const auto& c : n.children) options.push_back(Build(*c, nfa));
      return nfa.Alternate(options);
    }
    case Node::kRepeat:
      break;
  }
  const Node& child = *n.children[0];
  Fragment f = nfa.Empty();
  for (int i = 0; i < n.min; ++i) f = nfa.Concat(f, Build(child, nfa));
  if (n.max == -1) return nfa.Concat(f, nfa.Star(Build(child, nfa)));
  // x{0,k} as (x(x(...)?)?)?: k optional copies, each needing the one before.
  Fragment tail = nfa.Empty();
  for (int i = n.min; i < n.max; ++i) tail = nfa.Optional(nfa.Concat(Build(child, nfa), tail));
  return nfa.Concat(f, tail);
}

}  // namespace

Fragment CompileRegex(std::string_view pattern, ByteNfa& nfa) {
  const std::unique_ptr<Node> root = Parser(pattern).Parse();
  return Build(*root, nfa);
}

}  // namespace kiln::grammar
