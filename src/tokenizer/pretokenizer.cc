#include "tokenizer/pretokenizer.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <algorithm>
#include <map>

#include "tokenizer/unicode.h"
#include "util/error.h"

namespace kiln::tok {
namespace {

using unicode::Flags;

// ---------------------------------------------------------------------------------------------
// Regex lists, verbatim from llama.cpp (src/llama-vocab.cpp, llm_tokenizer_bpe), which are what
// a GGUF's tokenizer.ggml.pre name means.

// The GPT-2 pattern; llama.cpp runs it with a hand-written splitter (SplitGpt2).
constexpr const char* kGpt2Regex =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)";
// The Llama 3 pattern; hand-written splitter (SplitLlama3). Both spellings are recognised.
constexpr const char* kLlama3Regex =
    "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|"
    "\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
constexpr const char* kLlama3RegexCaseInsensitive =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| "
    "?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

const std::vector<std::string>& RegexesDefault() {
  static const std::vector<std::string> r = {
      "[\\p{P}\\$\\+<=>\\^~\\|]+",
      kGpt2Regex,
      "\\p{N}+",
      "[0-9][0-9][0-9]",
  };
  return r;
}

const std::vector<std::string>& RegexesLlama3() {
  static const std::vector<std::string> r = {kLlama3Regex};
  return r;
}

const std::vector<std::string>& RegexesDeepseekLlm() {
  static const std::vector<std::string> r = {
      "[\r\n]",
      // Letters of many scripts (the literal from llama.cpp).
      "\\s?[A-Za-zµÀ-ÖØ-öø-ƺƼ-ƿǄ-ʓʕ-ʯͰ-ͳͶͷͻ-ͽͿΆ"
      "Έ-ΊΌΎ-ΡΣ-ϵϷ-ҁҊ-ԯԱ-ՖႠ-ჅᎠ-Ᏽᏸ-ᏽᲐ-ᲺᲽ-Ჿᴀ-ᴫᵫ-ᵷ"
      "ᵹ-ᶚḀ-ἕἘ-Ἕἠ-ὅὈ-Ὅὐ-ὗὙὛὝὟ-ώᾀ-ᾴᾶ-ᾼιῂ-ῄῆ-ῌῐ-ΐ"
      "ῖ-Ίῠ-Ῥῲ-ῴῶ-ῼℂℇℊ-ℓℕℙ-ℝℤΩℨK-ℭℯ-ℴℹℼ-ℿⅅ-ⅉⅎↃↄ"
      "Ⰰ-ⱻⱾ-ⳤⳫ-ⳮⳲⳳꙀ-ꙭꚀ-ꚛꜢ-ꝯꝱ-ꞇꞋ-ꞎꭰ-ꮿﬀ-ﬆﬓ-ﬗＡ-"
      "Ｚａ-"
      "ｚ𐐀-𐑏𐒰-𐓓𐓘-𐓻𐲀-𐲲𐳀-𐳲𑢠-𑣟𞤀-𞥃]+",
      "\\s?[!-/:-~！-／：-～‘-‟　-。]+",
      "\\s+$",
      "[一-龥ࠀ-一가-퟿]+",
      "\\p{N}+",
  };
  return r;
}

const std::vector<std::string>& RegexesDeepseek3() {
  static const std::vector<std::string> r = {
      "\\p{N}{1,3}",
      "[一-龥぀-ゟ゠-ヿ]+",
      "[!\"#$%&'()*+,\\-./"
      ":;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\r\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+|"
      " ?[\\p{P}\\p{S}]+[\r\n]*|\\s*[\r\n]+|\\s+(?!\\S)|\\s+",
  };
  return r;
}

const std::vector<std::string>& RegexesDeepseekCoder() {
  static const std::vector<std::string> r = {
      "[\r\n]", "\\s?\\p{L}+", "\\s?\\p{P}+", "[一-龥ࠀ-一가-퟿]+", "\\p{N}",
  };
  return r;
}

const std::vector<std::string>& RegexesFalcon() {
  static const std::vector<std::string> r = {
      "[\\p{P}\\$\\+<=>\\^~\\|`]+",
      kGpt2Regex,
      "[0-9][0-9][0-9]",
  };
  return r;
}

const std::vector<std::string>& RegexesStarcoder() {
  static const std::vector<std::string> r = {"\\p{N}", kGpt2Regex};
  return r;
}

const std::vector<std::string>& RegexesGpt2() {
  static const std::vector<std::string> r = {kGpt2Regex};
  return r;
}

const std::vector<std::string>& RegexesQwen2() {
  static const std::vector<std::string> r = {
      "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|"
      "\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
  };
  return r;
}

const std::vector<std::string>& RegexesPoro() {
  static const std::vector<std::string> r = {" ?[^(\\s|.,!?…。，、।۔،)]+"};
  return r;
}

const std::vector<std::string>& RegexesViking() {
  static const std::vector<std::string> r = {" ?[^(\\s|.,!?…。，、।۔،)]+", "\\p{N}"};
  return r;
}

const std::vector<std::string>& RegexesTekken() {
  static const std::vector<std::string> r = {
      "[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}])([^a-z]))*((?=[\\p{L}])([^A-Z]))+|"
      "[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}])([^a-z]))+((?=[\\p{L}])([^A-Z]))*|"
      "\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
  };
  return r;
}

const std::vector<std::string>& RegexesChameleon() {
  static const std::vector<std::string> r = {
      "<sentinel:[0-9]+>",      "(IMGIMG)((A|B|C|D|E|F|G|H|I){1,4})Z",
      "([\\t\\n]|    |  )",     "\\p{N}",
      "[\\p{P}!-/:-@\\[-`{-~]", kGpt2Regex,
  };
  return r;
}

const std::vector<std::string>& RegexesGpt4o() {
  static const std::vector<std::string> r = {
      "[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}])([^a-z]))*((?=[\\p{L}])([^A-Z]))+"
      "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|"
      "[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}])([^a-z]))+((?=[\\p{L}])([^A-Z]))*"
      "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|"
      "\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
  };
  return r;
}

const std::vector<std::string>& RegexesSuperbpe() {
  static const std::vector<std::string> r = {"\\p{N}+", "(?=(\\d{3})+(?!\\d))"};
  return r;
}

const std::vector<std::string>& RegexesBailingmoe() {
  static const std::vector<std::string> r = {
      "'(?:[sSdDmMtT]|[lL][lL]|[vV][eE]|[rR][eE])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}|"
      " ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]|\\s+(?!\\S)|\\s+",
  };
  return r;
}

const std::vector<std::string>& RegexesSeedCoder() {
  static const std::vector<std::string> r = {
      "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|"
      "\\p{N}{1}| ?[^\\s\\p{L}\\p{N}\\r\\n]+|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
  };
  return r;
}

struct PreTypeFlags {
  bool ignore_merges = false;
  bool add_bos = false;
  bool clean_spaces = true;
  bool no_bos = false;
};

PreTypeInfo MakeInfo(const std::vector<std::string>& regexes, PreTypeFlags f) {
  PreTypeInfo info;
  info.regexes = regexes;
  info.ignore_merges = f.ignore_merges;
  info.add_bos = f.add_bos;
  info.clean_spaces = f.clean_spaces;
  info.no_bos = f.no_bos;
  return info;
}

// Name -> settings, as llama.cpp's llama_vocab::impl::load maps tokenizer.ggml.pre.
const std::map<std::string, PreTypeInfo, std::less<>>& PreTypes() {
  static const auto* types = [] {
    auto* m = new std::map<std::string, PreTypeInfo, std::less<>>;
    const PreTypeFlags plain;
    const PreTypeFlags no_clean{.clean_spaces = false};
    auto add = [m](std::initializer_list<const char*> names, const std::vector<std::string>& re,
                   PreTypeFlags f) {
      for (const char* n : names) m->emplace(n, MakeInfo(re, f));
    };
    add({"default"}, RegexesDefault(), plain);
    add({"llama3", "llama-v3", "llama-bpe", "falcon3", "falcon-h1", "pixtral", "midm-2.0", "lfm2"},
        RegexesLlama3(), {.ignore_merges = true, .add_bos = true});
    add({"deepseek-llm"}, RegexesDeepseekLlm(), no_clean);
    add({"deepseek-coder"}, RegexesDeepseekCoder(), no_clean);
    add({"deepseek-v3"}, RegexesDeepseek3(), no_clean);
    add({"falcon"}, RegexesFalcon(), plain);
    add({"mpt"}, RegexesGpt2(), plain);
    add({"starcoder"}, RegexesStarcoder(), plain);
    add({"gpt-2", "phi-2", "jina-es", "jina-de", "gigachat", "jina-v2-es", "jina-v2-de", "a.x-4.0",
         "mellum", "jina-v1-en", "jina-v2-code", "roberta-bpe"},
        RegexesGpt2(), plain);
    add({"refact"}, RegexesStarcoder(), plain);
    add({"command-r"}, RegexesStarcoder(), no_clean);
    add({"qwen2", "deepseek-r1-qwen"}, RegexesQwen2(), no_clean);
    add({"stablelm2"}, RegexesQwen2(), plain);
    add({"olmo"}, RegexesGpt2(), plain);
    add({"dbrx", "smaug-bpe"}, RegexesLlama3(), plain);
    add({"poro-chat"}, RegexesPoro(), no_clean);
    add({"glm4", "chatglm-bpe"}, RegexesLlama3(), {.no_bos = true});
    add({"viking"}, RegexesViking(), no_clean);
    add({"jais"}, RegexesGpt2(), plain);
    add({"tekken"}, RegexesTekken(),
        {.ignore_merges = true, .add_bos = true, .clean_spaces = false});
    add({"smollm"}, RegexesStarcoder(), no_clean);
    add({"codeshell"}, RegexesStarcoder(), plain);
    add({"bloom", "gpt3-finnish"}, RegexesPoro(), plain);
    add({"exaone"}, RegexesStarcoder(), plain);
    add({"exaone4"}, RegexesGpt2(), plain);
    add({"chameleon"}, RegexesChameleon(), {.add_bos = true, .clean_spaces = false});
    add({"minerva-7b"}, RegexesStarcoder(), plain);
    add({"megrez"}, RegexesQwen2(), plain);
    add({"gpt-4o", "llama4"}, RegexesGpt4o(), no_clean);
    add({"superbpe"}, RegexesSuperbpe(), no_clean);
    add({"trillion"}, RegexesGpt2(), no_clean);
    add({"bailingmoe"}, RegexesBailingmoe(), no_clean);
    add({"seed-coder"}, RegexesSeedCoder(), no_clean);
    add({"hunyuan"}, RegexesQwen2(), no_clean);
    add({"hunyuan-dense"}, RegexesDeepseek3(), no_clean);
    return m;
  }();
  return *types;
}

// ---------------------------------------------------------------------------------------------
// "Collapsed" matching. llama.cpp runs regexes that use \p{N} \p{L} \p{P} \p{M} \p{S} over a
// copy of the text with one byte per code point: ASCII stays, other white space becomes \v,
// other code points become one byte per class (0xD1 N, 0xD2 L, 0xD3 P, 0xD4 M, 0xD5 S, 0xD0 the
// rest); each \p{X} in the regex becomes a class of its byte plus the ASCII members of X.

constexpr const char* kCategoryNames[] = {"\\p{N}", "\\p{L}", "\\p{P}", "\\p{M}", "\\p{S}"};

bool UsesCategories(const std::string& re) {
  for (const char* c : kCategoryNames) {
    if (re.find(c) != std::string::npos) return true;
  }
  return false;
}

char CollapsedByte(uint32_t cp) {
  if (cp < 128) return static_cast<char>(cp);
  const uint16_t f = Flags(cp);
  if (f & unicode::kWhitespace) return '\x0B';
  switch (f & unicode::kCategoryMask) {
    case unicode::kNumber:
      return '\xD1';
    case unicode::kLetter:
      return '\xD2';
    case unicode::kPunctuation:
      return '\xD3';
    case unicode::kMark:
      return '\xD4';
    case unicode::kSymbol:
      return '\xD5';
    default:
      return '\xD0';
  }
}

// The class body (without brackets) standing for \p{X} in collapsed text.
const char* CollapsedClass(char category) {
  switch (category) {
    case 'N':
      return "\xD1"
             "0-9";
    case 'L':
      return "\xD2"
             "A-Za-z";
    case 'P':
      return "\xD3"
             "!-#%-*,-/:-;?-@\\[-\\]_\\{\\}";
    case 'M':
      return "\xD4";
    case 'S':
      return "\xD5"
             "\\$\\+<->\\^`\\|";
    default:
      return nullptr;
  }
}

std::string CollapseRegex(const std::string& re) {
  for (unsigned char c : re) {
    KILN_CHECK(c < 128,
               "pre-tokenizer regex mixes \\p{..} classes with non-ASCII characters: ", re);
  }
  std::string out;
  bool in_class = false;
  for (size_t i = 0; i < re.size(); ++i) {
    const char c = re[i];
    if (c == '[' && (i == 0 || re[i - 1] != '\\')) {
      out += '[';
      in_class = true;
      continue;
    }
    if (in_class && c == ']' && re[i - 1] != '\\') {
      out += ']';
      in_class = false;
      continue;
    }
    if (c == '\\' && i + 4 < re.size() && re[i + 1] == 'p' && re[i + 2] == '{' &&
        re[i + 4] == '}') {
      if (const char* cls = CollapsedClass(re[i + 3])) {
        if (!in_class) out += '[';
        out += cls;
        if (!in_class) out += ']';
        i += 4;
        continue;
      }
    }
    out += c;
  }
  return out;
}

enum class StepKind { kGpt2, kLlama3, kCollapsed, kCodepoint };

// Code points -> (piece lengths), one regex at a time.
using Pieces = std::vector<uint32_t>;

}  // namespace

const PreTypeInfo* FindPreType(std::string_view name) {
  const auto& types = PreTypes();
  auto it = types.find(name);
  return it == types.end() ? nullptr : &it->second;
}

// ---------------------------------------------------------------------------------------------
// Hand-written splitters. They reproduce llama.cpp's unicode_regex_split_custom_gpt2/_llama3,
// which is what llama.cpp actually runs for these two patterns (not a regex engine).

namespace {

constexpr uint16_t kWsLetterNumber = unicode::kWhitespace | unicode::kLetter | unicode::kNumber;

// Walks one piece [begin, end) of the code points; Emit(end) closes a word.
class PieceCursor {
 public:
  PieceCursor(const std::vector<uint32_t>& cpts, size_t begin, size_t end, Pieces* out)
      : cpts_(cpts), end_(end), prev_(begin), out_(out) {}

  static constexpr uint32_t kOutside = 0xFFFFFFFF;
  uint32_t Cp(size_t p) const { return p < end_ ? cpts_[p] : kOutside; }
  uint16_t Fl(size_t p) const { return p < end_ ? Flags(cpts_[p]) : 0; }
  size_t end() const { return end_; }
  void Emit(size_t end) {
    if (end > prev_) out_->push_back(static_cast<uint32_t>(end - prev_));
    prev_ = end;
  }

 private:
  const std::vector<uint32_t>& cpts_;
  size_t end_;
  size_t prev_;
  Pieces* out_;
};

// Length of an English contraction ('s 't 'm 'd 're 've 'll) at p, or 0.
size_t ContractionLen(const PieceCursor& c, size_t p, bool ignore_case) {
  if (c.Cp(p) != '\'' || p + 1 >= c.end()) return 0;
  auto cp = [&](size_t q) { return ignore_case ? unicode::AsciiLower(c.Cp(q)) : c.Cp(q); };
  const uint32_t c1 = cp(p + 1);
  if (c1 == 's' || c1 == 't' || c1 == 'm' || c1 == 'd') return 2;
  if (p + 2 >= c.end()) return 0;
  const uint32_t c2 = cp(p + 2);
  if ((c1 == 'r' && c2 == 'e') || (c1 == 'v' && c2 == 'e') || (c1 == 'l' && c2 == 'l')) return 3;
  return 0;
}

// Whitespace run at p: count, and the end of its last \r or \n (0 when none).
struct WsRun {
  size_t count = 0;
  size_t last_newline_end = 0;
};

WsRun ScanWhitespace(const PieceCursor& c, size_t p) {
  WsRun r;
  while (c.Fl(p + r.count) & unicode::kWhitespace) {
    const uint32_t cp = c.Cp(p + r.count);
    if (cp == '\r' || cp == '\n') r.last_newline_end = p + r.count + 1;
    ++r.count;
  }
  return r;
}

}  // namespace

// 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
std::vector<uint32_t> SplitGpt2(const std::vector<uint32_t>& cpts, const Pieces& pieces) {
  Pieces out;
  out.reserve(pieces.size() + cpts.size() / 4);
  size_t begin = 0;
  for (uint32_t len : pieces) {
    const size_t end = begin + len;
    PieceCursor c(cpts, begin, end, &out);
    size_t p = begin;
    while (p < end) {
      const uint32_t cp = c.Cp(p);
      if (size_t n = ContractionLen(c, p, /*ignore_case=*/false)) {
        p += n;
        c.Emit(p);
        continue;
      }
      const bool space = cp == ' ';
      uint16_t f = space ? c.Fl(p + 1) : c.Fl(p);
      if (f & unicode::kLetter) {  // ' ?\p{L}+'
        p += space;
        while (f & unicode::kLetter) f = c.Fl(++p);
        c.Emit(p);
        continue;
      }
      if (f & unicode::kNumber) {  // ' ?\p{N}+'
        p += space;
        while (f & unicode::kNumber) f = c.Fl(++p);
        c.Emit(p);
        continue;
      }
      if (!(f & kWsLetterNumber) && f != 0) {  // ' ?[^\s\p{L}\p{N}]+'
        p += space;
        while (!(f & kWsLetterNumber) && f != 0) f = c.Fl(++p);
        c.Emit(p);
        continue;
      }
      const WsRun ws = ScanWhitespace(c, p);
      if (ws.count > 1 && p + ws.count < end) {  // '\s+(?!\S)'
        p += ws.count - 1;
        c.Emit(p);
        continue;
      }
      if (ws.count > 0) {  // '\s+'
        p += ws.count;
        c.Emit(p);
        continue;
      }
      c.Emit(++p);
    }
    begin = end;
  }
  return out;
}

// (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|
// \s*[\r\n]+|\s+(?!\S)|\s+
std::vector<uint32_t> SplitLlama3(const std::vector<uint32_t>& cpts, const Pieces& pieces) {
  Pieces out;
  out.reserve(pieces.size() + cpts.size() / 4);
  size_t begin = 0;
  for (uint32_t len : pieces) {
    const size_t end = begin + len;
    PieceCursor c(cpts, begin, end, &out);
    size_t p = begin;
    while (p < end) {
      const uint32_t cp = c.Cp(p);
      const uint16_t f = c.Fl(p);
      if (size_t n = ContractionLen(c, p, /*ignore_case=*/true)) {
        p += n;
        c.Emit(p);
        continue;
      }
      // [^\r\n\p{L}\p{N}]?\p{L}+
      if (!(cp == '\r' || cp == '\n' || (f & unicode::kNumber)) &&
          ((f & unicode::kLetter) || (c.Fl(p + 1) & unicode::kLetter))) {
        ++p;
        while (c.Fl(p) & unicode::kLetter) ++p;
        c.Emit(p);
        continue;
      }
      // \p{N}{1,3}
      if (f & unicode::kNumber) {
        size_t run_start = p;
        while (c.Fl(p) & unicode::kNumber) {
          if (++p - run_start >= 3) {
            c.Emit(p);
            run_start = p;
          }
        }
        c.Emit(p);
        continue;
      }
      // ' ?[^\s\p{L}\p{N}]+[\r\n]*'
      uint16_t f2 = cp == ' ' ? c.Fl(p + 1) : f;
      if (!(f2 & kWsLetterNumber) && f != 0) {
        p += cp == ' ';
        while (!(f2 & kWsLetterNumber) && f2 != 0) f2 = c.Fl(++p);
        while (c.Cp(p) == '\r' || c.Cp(p) == '\n') ++p;
        c.Emit(p);
        continue;
      }
      const WsRun ws = ScanWhitespace(c, p);
      if (ws.last_newline_end > 0) {  // '\s*[\r\n]+'
        p = ws.last_newline_end;
        c.Emit(p);
        continue;
      }
      if (ws.count > 1 && p + ws.count < end) {  // '\s+(?!\S)'
        p += ws.count - 1;
        c.Emit(p);
        continue;
      }
      if (ws.count > 0) {  // '\s+'
        p += ws.count;
        c.Emit(p);
        continue;
      }
      c.Emit(++p);
    }
    begin = end;
  }
  return out;
}

// ---------------------------------------------------------------------------------------------

struct PreTokenizer::Step {
  StepKind kind = StepKind::kGpt2;
  std::string pattern;  // as compiled
  pcre2_code* code = nullptr;

  ~Step() {
    if (code != nullptr) pcre2_code_free(code);
  }
};

PreTokenizer::PreTokenizer(const std::vector<std::string>& regexes) {
  for (const std::string& re : regexes) {
    auto step = std::make_unique<Step>();
    uint32_t options = PCRE2_DOLLAR_ENDONLY;
    if (re == kGpt2Regex) {
      step->kind = StepKind::kGpt2;
    } else if (re == kLlama3Regex || re == kLlama3RegexCaseInsensitive) {
      step->kind = StepKind::kLlama3;
    } else if (UsesCategories(re)) {
      step->kind = StepKind::kCollapsed;
      step->pattern = CollapseRegex(re);
      need_collapsed_ = true;
    } else {
      step->kind = StepKind::kCodepoint;
      step->pattern = re;
      options |= PCRE2_UTF;
      need_codepoint_text_ = true;
    }
    if (!step->pattern.empty()) {
      int err = 0;
      PCRE2_SIZE err_offset = 0;
      step->code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(step->pattern.data()),
                                 step->pattern.size(), options, &err, &err_offset, nullptr);
      if (step->code == nullptr) {
        PCRE2_UCHAR msg[256];
        pcre2_get_error_message(err, msg, sizeof(msg));
        throw Error(StrCat("pre-tokenizer regex does not compile (", reinterpret_cast<char*>(msg),
                           " at offset ", static_cast<uint64_t>(err_offset), "): ", re));
      }
      pcre2_jit_compile(step->code, PCRE2_JIT_COMPLETE);  // falls back to the interpreter
    }
    steps_.push_back(std::move(step));
  }
}

PreTokenizer::~PreTokenizer() = default;

namespace {

struct MatchData {
  MatchData() : md(pcre2_match_data_create(8, nullptr)) {}
  ~MatchData() { pcre2_match_data_free(md); }
  MatchData(const MatchData&) = delete;
  MatchData& operator=(const MatchData&) = delete;
  pcre2_match_data* md;
};

int RunMatch(const pcre2_code* code, const char* subject, size_t len, size_t start,
             uint32_t options, pcre2_match_data* md) {
  int rc =
      pcre2_match(code, reinterpret_cast<PCRE2_SPTR>(subject), len, start, options, md, nullptr);
  if (rc == PCRE2_ERROR_JIT_STACKLIMIT) {
    rc = pcre2_match(code, reinterpret_cast<PCRE2_SPTR>(subject), len, start,
                     options | PCRE2_NO_JIT, md, nullptr);
  }
  if (rc < 0 && rc != PCRE2_ERROR_NOMATCH) {
    PCRE2_UCHAR msg[256];
    pcre2_get_error_message(rc, msg, sizeof(msg));
    throw Error(StrCat("pre-tokenizer regex failed: ", reinterpret_cast<char*>(msg)));
  }
  return rc;
}

// Splits subject[0, len) into matches and gaps like std::regex_iterator walking it (an empty
// match is retried as non-empty at the same place, then the search moves one character on).
// Calls piece(begin, end) in subject offsets; empty matches produce no piece.
template <typename OnPiece>
void SplitByRegex(const pcre2_code* code, const char* subject, size_t len, bool utf,
                  pcre2_match_data* md, OnPiece&& piece) {
  size_t start = 0;
  size_t last_end = 0;
  uint32_t options = utf ? PCRE2_NO_UTF_CHECK : 0;
  const uint32_t base_options = options;
  while (start <= len) {
    const int rc = RunMatch(code, subject, len, start, options, md);
    if (rc == PCRE2_ERROR_NOMATCH) {
      if (options == base_options) break;
      // After an empty match: move one character on and search normally.
      options = base_options;
      if (start >= len) break;
      start += utf ? unicode::SeqLenFromLead(static_cast<uint8_t>(subject[start])) : 1;
      continue;
    }
    const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md);
    const size_t ms = ov[0];
    const size_t me = ov[1];
    if (ms > last_end) piece(last_end, ms);
    if (me > ms) {
      piece(ms, me);
      last_end = me;
      options = base_options;
    } else {
      options = base_options | PCRE2_NOTEMPTY_ATSTART | PCRE2_ANCHORED;
      last_end = me;
    }
    start = me;
  }
  if (last_end < len) piece(last_end, len);
}

}  // namespace

void PreTokenizer::Split(std::string_view text, PreTokenized* out) const {
  out->text.clear();
  out->ends.clear();
  std::vector<uint32_t> cpts;
  unicode::DecodeUtf8(text, &cpts);
  if (cpts.empty()) return;

  std::string collapsed;
  if (need_collapsed_) {
    collapsed.resize(cpts.size());
    for (size_t i = 0; i < cpts.size(); ++i) collapsed[i] = CollapsedByte(cpts[i]);
  }
  // For regexes without \p{..}: the text with non-ASCII white space as \v (as llama.cpp feeds
  // std::wregex), in UTF-8, with the code point index of each byte offset.
  std::string cp_text;
  std::vector<uint32_t> cp_byte;  // code point index -> byte offset (size n + 1)
  std::vector<uint32_t> byte_cp;  // byte offset -> code point index (at character starts)
  if (need_codepoint_text_) {
    cp_byte.resize(cpts.size() + 1);
    cp_text.reserve(cpts.size());
    for (size_t i = 0; i < cpts.size(); ++i) {
      cp_byte[i] = static_cast<uint32_t>(cp_text.size());
      uint32_t cp = cpts[i];
      if (cp > 0x7F && (Flags(cp) & unicode::kWhitespace)) cp = 0x0B;
      if (cp >= 0xD800 && cp <= 0xDFFF) cp = unicode::kReplacementChar;  // PCRE2 needs valid UTF
      unicode::AppendUtf8(cp, &cp_text);
    }
    cp_byte[cpts.size()] = static_cast<uint32_t>(cp_text.size());
    byte_cp.assign(cp_text.size() + 1, 0);
    for (size_t i = 0; i <= cpts.size(); ++i) byte_cp[cp_byte[i]] = static_cast<uint32_t>(i);
  }

  Pieces pieces = {static_cast<uint32_t>(cpts.size())};
  MatchData match;
  for (const auto& step : steps_) {
    switch (step->kind) {
      case StepKind::kGpt2:
        pieces = SplitGpt2(cpts, pieces);
        break;
      case StepKind::kLlama3:
        pieces = SplitLlama3(cpts, pieces);
        break;
      case StepKind::kCollapsed: {
        Pieces next;
        next.reserve(pieces.size() * 2);
        size_t begin = 0;
        for (uint32_t len : pieces) {
          SplitByRegex(step->code, collapsed.data() + begin, len, /*utf=*/false, match.md,
                       [&](size_t b, size_t e) { next.push_back(static_cast<uint32_t>(e - b)); });
          begin += len;
        }
        pieces = std::move(next);
        break;
      }
      case StepKind::kCodepoint: {
        Pieces next;
        next.reserve(pieces.size() * 2);
        size_t begin = 0;
        for (uint32_t len : pieces) {
          const size_t b0 = cp_byte[begin];
          const size_t b1 = cp_byte[begin + len];
          SplitByRegex(
              step->code, cp_text.data() + b0, b1 - b0, /*utf=*/true, match.md,
              [&](size_t b, size_t e) { next.push_back(byte_cp[b0 + e] - byte_cp[b0 + b]); });
          begin += len;
        }
        pieces = std::move(next);
        break;
      }
    }
  }

  out->text.reserve(text.size() + 8);
  out->ends.reserve(pieces.size());
  size_t i = 0;
  for (uint32_t len : pieces) {
    for (uint32_t k = 0; k < len; ++k) unicode::AppendUtf8(cpts[i++], &out->text);
    if (len > 0) out->ends.push_back(static_cast<uint32_t>(out->text.size()));
  }
}

}  // namespace kiln::tok
