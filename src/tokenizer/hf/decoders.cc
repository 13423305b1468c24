#include "tokenizer/hf/decoders.h"

#include "tokenizer/hf/pattern.h"
#include "tokenizer/hf/text.h"
#include "tokenizer/unicode.h"
#include "util/error.h"
#include "util/utf8.h"

namespace kiln::hf {
namespace {

constexpr int kMaxDepth = 16;
constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD

// Joins everything into one string: GPT-2 stand-in characters back to bytes; a token with a
// character that is no stand-in (an added token such as "日本") keeps its own bytes.
class ByteLevelDecoder final : public Decoder {
 public:
  void Decode(std::vector<std::string>* tokens, DecodeMode mode) const override {
    std::string bytes;
    std::vector<uint32_t> cps;
    for (const std::string& t : *tokens) {
      cps.clear();
      ToCodepoints(t, &cps);
      std::string mapped;
      bool ok = true;
      for (uint32_t cp : cps) {
        const int b = unicode::CodepointToByte(cp);
        if (b < 0) {
          ok = false;
          break;
        }
        mapped += static_cast<char>(b);
      }
      bytes += ok ? mapped : t;
    }
    tokens->assign(1, mode.piece ? bytes : ValidUtf8OrReplace(bytes));
  }
};

class MetaspaceDecoder final : public Decoder {
 public:
  MetaspaceDecoder(uint32_t replacement, bool prepend) : prepend_(prepend) {
    AppendCodepoint(replacement, &replacement_);
  }
  void Decode(std::vector<std::string>* tokens, DecodeMode mode) const override {
    for (size_t i = 0; i < tokens->size(); ++i) {
      std::string& t = (*tokens)[i];
      // The library drops every replacement character of the first token, not just a leading one.
      const std::string_view with = (i == 0 && prepend_ && !mode.piece) ? "" : " ";
      std::string out;
      for (size_t pos = 0;;) {
        const size_t hit = t.find(replacement_, pos);
        out.append(t, pos, hit == std::string::npos ? std::string::npos : hit - pos);
        if (hit == std::string::npos) break;
        out += with;
        pos = hit + replacement_.size();
      }
      t.swap(out);
    }
  }

 private:
  std::string replacement_;
  bool prepend_;
};

// <0xXX> tokens become bytes; runs that are not valid UTF-8 become one U+FFFD per byte.
class ByteFallbackDecoder final : public Decoder {
 public:
  void Decode(std::vector<std::string>* tokens, DecodeMode mode) const override {
    std::vector<std::string> out;
    std::string run;
    size_t run_len = 0;
    auto flush = [&] {
      if (run_len == 0) return;
      if (mode.piece || ValidUtf8OrReplace(run) == run) {
        out.push_back(run);
      } else {
        for (size_t k = 0; k < run_len; ++k) out.emplace_back(kReplacement);
      }
      run.clear();
      run_len = 0;
    };
    for (std::string& t : *tokens) {
      int byte = -1;
      if (t.size() == 6 && t.compare(0, 3, "<0x") == 0 && t[5] == '>') byte = ParseHex(t[3], t[4]);
      if (byte >= 0) {
        run += static_cast<char>(byte);
        ++run_len;
      } else {
        flush();
        out.push_back(std::move(t));
      }
    }
    flush();
    tokens->swap(out);
  }

 private:
  static int HexDigit(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  }
  static int ParseHex(char hi, char lo) {
    const int h = HexDigit(hi), l = HexDigit(lo);
    return h < 0 || l < 0 ? -1 : h * 16 + l;
  }
};

class FuseDecoder final : public Decoder {
 public:
  void Decode(std::vector<std::string>* tokens, DecodeMode) const override {
    std::string all;
    for (const std::string& t : *tokens) all += t;
    tokens->assign(1, all);
  }
};

// Removes up to `start` leading and `stop` trailing `content` characters of each token.
class StripDecoder final : public Decoder {
 public:
  StripDecoder(uint32_t content, size_t start, size_t stop)
      : content_(content), start_(start), stop_(stop) {}
  void Decode(std::vector<std::string>* tokens, DecodeMode mode) const override {
    std::vector<uint32_t> cps;
    for (std::string& t : *tokens) {
      cps.clear();
      ToCodepoints(t, &cps);
      size_t b = 0, e = cps.size();
      // A stream piece is never at the start of the text: its leading character stays.
      for (size_t k = 0; !mode.piece && k < start_ && b < e && cps[b] == content_; ++k) ++b;
      for (size_t k = 0; k < stop_ && e > b && cps[e - 1] == content_; ++k) --e;
      if (b == 0 && e == cps.size()) continue;
      std::string out;
      for (size_t i = b; i < e; ++i) AppendCodepoint(cps[i], &out);
      t.swap(out);
    }
  }

 private:
  uint32_t content_;
  size_t start_, stop_;
};

class ReplaceDecoder final : public Decoder {
 public:
  ReplaceDecoder(Regex re, std::string content)
      : re_(std::move(re)), content_(std::move(content)) {}
  void Decode(std::vector<std::string>* tokens, DecodeMode) const override {
    std::vector<Match> matches;
    for (std::string& t : *tokens) {
      re_.FindAll(t, &matches);
      if (matches.empty()) continue;
      std::string out;
      size_t prev = 0;
      for (const Match& m : matches) {
        out.append(t, prev, m.start - prev);
        out += content_;
        prev = m.end;
      }
      out.append(t, prev, std::string::npos);
      t.swap(out);
    }
  }

 private:
  Regex re_;
  std::string content_;
};

void ReplaceAll(std::string* s, std::string_view from, std::string_view to) {
  std::string out;
  size_t pos = 0;
  for (size_t hit; (hit = s->find(from, pos)) != std::string::npos; pos = hit + from.size()) {
    out.append(*s, pos, hit - pos);
    out += to;
  }
  out.append(*s, pos, std::string::npos);
  s->swap(out);
}

class WordPieceDecoder final : public Decoder {
 public:
  WordPieceDecoder(std::string prefix, bool cleanup)
      : prefix_(std::move(prefix)), cleanup_(cleanup) {}
  void Decode(std::vector<std::string>* tokens, DecodeMode mode) const override {
    for (size_t i = 0; i < tokens->size(); ++i) {
      std::string& t = (*tokens)[i];
      if (i != 0 || mode.piece) {
        if (t.compare(0, prefix_.size(), prefix_) == 0) {
          t.erase(0, prefix_.size());
        } else {
          t.insert(0, 1, ' ');
        }
      }
      if (cleanup_) Cleanup(&t);
    }
  }
  // The library's cleanup: transformers' list plus "do not".
  static void Cleanup(std::string* t) { CleanUpSpaces(t, /*do_not=*/true); }

 private:
  std::string prefix_;
  bool cleanup_;
};

// BPEDecoder: the end-of-word suffix becomes a space (nothing after the last token).
class BpeSuffixDecoder final : public Decoder {
 public:
  explicit BpeSuffixDecoder(std::string suffix) : suffix_(std::move(suffix)) {}
  void Decode(std::vector<std::string>* tokens, DecodeMode mode) const override {
    for (size_t i = 0; i < tokens->size(); ++i) {
      const bool last = i + 1 == tokens->size() && !mode.piece;
      ReplaceAll(&(*tokens)[i], suffix_, last ? "" : " ");
    }
  }

 private:
  std::string suffix_;
};

class SequenceDecoder final : public Decoder {
 public:
  explicit SequenceDecoder(std::vector<std::unique_ptr<Decoder>> steps)
      : steps_(std::move(steps)) {}
  void Decode(std::vector<std::string>* tokens, DecodeMode mode) const override {
    for (const auto& d : steps_) d->Decode(tokens, mode);
  }

 private:
  std::vector<std::unique_ptr<Decoder>> steps_;
};

std::unique_ptr<Decoder> MakeMetaspaceDecoder(const Json& j, const std::string& where) {
  bool prepend = OptBool(j, "add_prefix_space", where, true);
  if (auto scheme = OptString(j, "prepend_scheme", where)) {
    KILN_CHECK(*scheme == "always" || *scheme == "first" || *scheme == "never", where,
               ".prepend_scheme: unknown value '", *scheme, "' (always, first, never)");
    prepend = *scheme != "never";
  }
  return std::make_unique<MetaspaceDecoder>(GetChar(j, "replacement", where), prepend);
}

}  // namespace

void CleanUpSpaces(std::string* t, bool do_not) {
  static constexpr std::pair<std::string_view, std::string_view> kRules[] = {
      {" .", "."},   {" ?", "?"},     {" !", "!"},    {" ,", ","},
      {" ' ", "'"},  {" n't", "n't"}, {" 'm", "'m"},  {" do not", " don't"},
      {" 's", "'s"}, {" 've", "'ve"}, {" 're", "'re"}};
  for (const auto& [from, to] : kRules) {
    if (do_not || from != " do not") ReplaceAll(t, from, to);
  }
}

std::unique_ptr<Decoder> MakeDecoder(const Json& j, const std::string& where, int depth) {
  if (j.is_null()) return nullptr;
  KILN_CHECK(depth < kMaxDepth, where, ": Sequence nested too deeply");
  const std::string type = TypeOf(j, where);
  if (type == "ByteLevel") return std::make_unique<ByteLevelDecoder>();
  if (type == "Metaspace") return MakeMetaspaceDecoder(j, where);
  if (type == "ByteFallback") return std::make_unique<ByteFallbackDecoder>();
  if (type == "Fuse") return std::make_unique<FuseDecoder>();
  if (type == "Strip") {
    constexpr int64_t kMax = 1 << 20;
    return std::make_unique<StripDecoder>(GetChar(j, "content", where),
                                          OptInt(j, "start", where, 0, kMax, 0),
                                          OptInt(j, "stop", where, 0, kMax, 0));
  }
  if (type == "Replace") {
    return std::make_unique<ReplaceDecoder>(MakePattern(j, where), GetString(j, "content", where));
  }
  if (type == "WordPiece") {
    return std::make_unique<WordPieceDecoder>(OptString(j, "prefix", where).value_or("##"),
                                              OptBool(j, "cleanup", where, true));
  }
  if (type == "BPEDecoder") {
    return std::make_unique<BpeSuffixDecoder>(OptString(j, "suffix", where).value_or("</w>"));
  }
  if (type == "Sequence") {
    const Json& list = Field(j, "decoders", where);
    KILN_CHECK(list.is_array(), where, ".decoders: expected an array");
    std::vector<std::unique_ptr<Decoder>> steps;
    for (size_t i = 0; i < list.size(); ++i) {
      auto d = MakeDecoder(list[i], StrCat(where, ".decoders[", i, "]"), depth + 1);
      if (d) steps.push_back(std::move(d));
    }
    return std::make_unique<SequenceDecoder>(std::move(steps));
  }
  throw Error(StrCat(where, ": unsupported decoder type '", type, "'"));
}

}  // namespace kiln::hf
