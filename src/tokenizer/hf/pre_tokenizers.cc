#include "tokenizer/hf/pre_tokenizers.h"

#include "tokenizer/hf/pattern.h"
#include "tokenizer/hf/text.h"
#include "tokenizer/unicode.h"
#include "util/error.h"

namespace kiln::hf {
namespace {

constexpr int kMaxDepth = 16;

constexpr std::string_view kGpt2Regex =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

// Splits at regex matches with a behavior (ByteLevel's regex, Split, Whitespace).
void SplitRegex(std::vector<Piece>* pieces, const Regex& re, SplitBehavior behavior, bool invert) {
  std::vector<Match> matches;
  std::vector<Span> spans;
  SplitPieces(pieces, [&](std::string_view s, std::vector<Match>* out) {
    re.FindAll(s, &matches);
    SpansFromMatches(s.size(), matches, invert, &spans);
    ApplyBehavior(spans, behavior, out);
  });
}

template <typename Pred>
void SplitChars(std::vector<Piece>* pieces, Pred pred, SplitBehavior behavior) {
  std::vector<Span> spans;
  SplitPieces(pieces, [&](std::string_view s, std::vector<Match>* out) {
    SpansFromChars(s, pred, &spans);
    ApplyBehavior(spans, behavior, out);
  });
}

class ByteLevelStep final : public PreTokenizerStep {
 public:
  ByteLevelStep(bool add_prefix_space, bool use_regex)
      : add_prefix_space_(add_prefix_space), use_regex_(use_regex) {}
  void Apply(std::vector<Piece>* pieces) const override {
    static const Regex kRegex(kGpt2Regex, "ByteLevel");
    if (add_prefix_space_) {
      for (Piece& p : *pieces) {
        if (p.text.empty() || p.text[0] != ' ') {
          // The added space shares the first character's alignment (HF's prepend).
          if (Aligned(p)) p.align.insert(p.align.begin(), p.align.front());
          p.text.insert(0, 1, ' ');
        }
      }
    }
    if (use_regex_) SplitRegex(pieces, kRegex, SplitBehavior::kIsolated, false);
    for (Piece& p : *pieces) {
      if (Aligned(p)) {
        // Every stand-in character of a byte keeps that byte's alignment.
        Alignment align;
        align.reserve(p.align.size() * 2);
        for (size_t i = 0; i < p.text.size(); ++i) {
          align.insert(align.end(), unicode::ByteToUtf8(static_cast<uint8_t>(p.text[i])).size(),
                       p.align[i]);
        }
        p.align.swap(align);
      }
      p.text = ByteLevelMap(p.text);
    }
  }

 private:
  bool add_prefix_space_, use_regex_;
};

class SplitStep final : public PreTokenizerStep {
 public:
  SplitStep(Regex re, SplitBehavior behavior, bool invert)
      : re_(std::move(re)), behavior_(behavior), invert_(invert) {}
  void Apply(std::vector<Piece>* pieces) const override {
    SplitRegex(pieces, re_, behavior_, invert_);
  }

 private:
  Regex re_;
  SplitBehavior behavior_;
  bool invert_;
};

enum class Prepend { kAlways, kFirst, kNever };

class MetaspaceStep final : public PreTokenizerStep {
 public:
  MetaspaceStep(uint32_t replacement, Prepend prepend, bool split)
      : replacement_cp_(replacement), prepend_(prepend), split_(split) {
    AppendCodepoint(replacement, &replacement_);
  }
  void Apply(std::vector<Piece>* pieces) const override {
    for (Piece& p : *pieces) {
      const bool aligned = Aligned(p);
      std::string out;
      out.reserve(p.text.size() + 8);
      Alignment align;  // the replacement takes the space's alignment, a prefix the first's
      for (size_t i = 0; i < p.text.size(); ++i) {
        const char c = p.text[i];
        if (c == ' ') {
          out += replacement_;
        } else {
          out += c;
        }
        if (aligned) align.insert(align.end(), c == ' ' ? replacement_.size() : 1, p.align[i]);
      }
      const bool starts = out.compare(0, replacement_.size(), replacement_) == 0;
      if (!starts && (prepend_ == Prepend::kAlways || (prepend_ == Prepend::kFirst && p.first))) {
        out.insert(0, replacement_);
        if (aligned) align.insert(align.begin(), replacement_.size(), align.front());
      }
      p.text.swap(out);
      if (aligned) p.align.swap(align);
    }
    if (split_) {
      const uint32_t r = replacement_cp_;
      SplitChars(
          pieces, [r](uint32_t cp) { return cp == r; }, SplitBehavior::kMergedWithNext);
    }
  }

 private:
  uint32_t replacement_cp_;
  std::string replacement_;
  Prepend prepend_;
  bool split_;
};

// A step that is one character-class split.
template <typename Pred>
class CharSplitStep final : public PreTokenizerStep {
 public:
  CharSplitStep(Pred pred, SplitBehavior behavior) : pred_(pred), behavior_(behavior) {}
  void Apply(std::vector<Piece>* pieces) const override { SplitChars(pieces, pred_, behavior_); }

 private:
  Pred pred_;
  SplitBehavior behavior_;
};

template <typename Pred>
std::unique_ptr<PreTokenizerStep> MakeCharSplit(Pred pred, SplitBehavior behavior) {
  return std::make_unique<CharSplitStep<Pred>>(pred, behavior);
}

class WhitespaceStep final : public PreTokenizerStep {
 public:
  void Apply(std::vector<Piece>* pieces) const override {
    static const Regex kRegex(R"(\w+|[^\w\s]+)", "Whitespace");
    SplitRegex(pieces, kRegex, SplitBehavior::kRemoved, true);
  }
};

class BertStep final : public PreTokenizerStep {
 public:
  void Apply(std::vector<Piece>* pieces) const override {
    SplitChars(pieces, IsWhitespace, SplitBehavior::kRemoved);
    SplitChars(pieces, IsPunctuation, SplitBehavior::kIsolated);
  }
};

class SequenceStep final : public PreTokenizerStep {
 public:
  explicit SequenceStep(std::vector<std::unique_ptr<PreTokenizerStep>> steps)
      : steps_(std::move(steps)) {}
  void Apply(std::vector<Piece>* pieces) const override {
    for (const auto& s : steps_) s->Apply(pieces);
  }

 private:
  std::vector<std::unique_ptr<PreTokenizerStep>> steps_;
};

std::unique_ptr<PreTokenizerStep> MakeMetaspace(const Json& j, const std::string& where) {
  Prepend prepend =
      OptBool(j, "add_prefix_space", where, true) ? Prepend::kAlways : Prepend::kNever;
  if (auto scheme = OptString(j, "prepend_scheme", where)) {
    if (*scheme == "always") {
      prepend = Prepend::kAlways;
    } else if (*scheme == "first") {
      prepend = Prepend::kFirst;
    } else if (*scheme == "never") {
      prepend = Prepend::kNever;
    } else {
      throw Error(
          StrCat(where, ".prepend_scheme: unknown value '", *scheme, "' (always, first, never)"));
    }
  }
  return std::make_unique<MetaspaceStep>(GetChar(j, "replacement", where), prepend,
                                         OptBool(j, "split", where, true));
}

}  // namespace

std::string ByteLevelMap(std::string_view s) {
  std::string out;
  out.reserve(s.size() + s.size() / 4);
  for (char c : s) out += unicode::ByteToUtf8(static_cast<uint8_t>(c));
  return out;
}

std::unique_ptr<PreTokenizerStep> MakePreTokenizer(const Json& j, const std::string& where,
                                                   int depth) {
  if (j.is_null()) return nullptr;
  KILN_CHECK(depth < kMaxDepth, where, ": Sequence nested too deeply");
  const std::string type = TypeOf(j, where);
  if (type == "ByteLevel") {
    return std::make_unique<ByteLevelStep>(OptBool(j, "add_prefix_space", where, true),
                                           OptBool(j, "use_regex", where, true));
  }
  if (type == "Split") {
    const std::string behavior = GetString(j, "behavior", where);
    return std::make_unique<SplitStep>(MakePattern(j, where),
                                       ParseSplitBehavior(behavior, FieldPath(where, "behavior")),
                                       OptBool(j, "invert", where, false));
  }
  if (type == "Metaspace") return MakeMetaspace(j, where);
  if (type == "Whitespace") return std::make_unique<WhitespaceStep>();
  if (type == "WhitespaceSplit") return MakeCharSplit(IsWhitespace, SplitBehavior::kRemoved);
  if (type == "BertPreTokenizer") return std::make_unique<BertStep>();
  if (type == "Digits") {
    const bool individual = OptBool(j, "individual_digits", where, false);
    return MakeCharSplit(IsNumeric,
                         individual ? SplitBehavior::kIsolated : SplitBehavior::kContiguous);
  }
  if (type == "Punctuation") {
    SplitBehavior behavior = SplitBehavior::kIsolated;
    if (auto b = OptString(j, "behavior", where)) {
      behavior = ParseSplitBehavior(*b, FieldPath(where, "behavior"));
    }
    return MakeCharSplit(IsPunctuation, behavior);
  }
  if (type == "Sequence") {
    const Json& list = Field(j, "pretokenizers", where);
    KILN_CHECK(list.is_array(), where, ".pretokenizers: expected an array");
    std::vector<std::unique_ptr<PreTokenizerStep>> steps;
    for (size_t i = 0; i < list.size(); ++i) {
      auto s = MakePreTokenizer(list[i], StrCat(where, ".pretokenizers[", i, "]"), depth + 1);
      if (s) steps.push_back(std::move(s));
    }
    return std::make_unique<SequenceStep>(std::move(steps));
  }
  throw Error(StrCat(where, ": unsupported pre-tokenizer type '", type, "'"));
}

}  // namespace kiln::hf
