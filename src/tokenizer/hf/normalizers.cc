#include "tokenizer/hf/normalizers.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "tokenizer/hf/pattern.h"
#include "tokenizer/hf/text.h"
#include "util/error.h"

namespace kiln::hf {
namespace {

constexpr int kMaxDepth = 16;  // nested Sequences

class UnicodeNormalizer final : public Normalizer {
 public:
  explicit UnicodeNormalizer(NormalForm form) : form_(form) {}
  void Normalize(std::string* s) const override { *s = UnicodeNormalize(*s, form_); }
  void NormalizeAligned(std::string* s, Alignment* align) const override;

 private:
  NormalForm form_;
};

// Positional, as HF's normalization (crate unicode-normalization-alignments) aligns: the input
// decomposes character by character, each decomposed character aligned to its source, and
// canonical reordering keeps alignments in place. Output character k then starts at decomposed
// position p_k (the decomposition of the output is that of the input, D(C(x)) = D(x)), so a
// composed character gets its first part's alignment (e + U+0301 -> e's).
void UnicodeNormalizer::NormalizeAligned(std::string* s, Alignment* align) const {
  std::string out = UnicodeNormalize(*s, form_);
  if (out == *s || align->size() != s->size()) {
    s->swap(out);
    return;
  }
  const NormalForm decompose =
      form_ == NormalForm::kNfc || form_ == NormalForm::kNfd ? NormalForm::kNfd : NormalForm::kNfkd;
  auto chars_of = [&](std::string_view c) {
    std::vector<uint32_t> cps;
    ToCodepoints(UnicodeNormalize(c, decompose), &cps);
    return cps.size();
  };
  Alignment positions;  // by decomposed character
  for (size_t i = 0; i < s->size();) {
    const size_t n = CharLen(*s, i);
    positions.insert(positions.end(), chars_of(std::string_view(*s).substr(i, n)), (*align)[i]);
    i += n;
  }
  Alignment result;
  result.reserve(out.size());
  size_t p = 0;
  for (size_t i = 0; i < out.size();) {
    const size_t n = CharLen(out, i);
    if (p >= positions.size()) break;
    result.insert(result.end(), n, positions[p]);
    p += chars_of(std::string_view(out).substr(i, n));
    i += n;
  }
  if (result.size() == out.size() && p == positions.size()) {
    align->swap(result);
  } else {  // not expected (D(C(x)) = D(x)); never leave the alignment out of step
    *align = AlignByCharacters(
        *s, *align, out, [this](std::string_view piece) { return UnicodeNormalize(piece, form_); });
  }
  s->swap(out);
}

class LowercaseNormalizer final : public Normalizer {
 public:
  void Normalize(std::string* s) const override { *s = Lowercase(*s); }
};

// Drops the code points for which `drop` holds.
template <typename Pred>
void Filter(std::string* s, Pred drop) {
  std::string out;
  out.reserve(s->size());
  for (size_t i = 0; i < s->size();) {
    size_t n = 1;
    const uint32_t cp = DecodeAt(*s, i, &n);
    if (!drop(cp)) out.append(*s, i, n);
    i += n;
  }
  s->swap(out);
}

class StripAccentsNormalizer final : public Normalizer {
 public:
  void Normalize(std::string* s) const override { Filter(s, IsMark); }
};

// Replace: every match of a literal or a regex becomes `content`.
class ReplaceNormalizer final : public Normalizer {
 public:
  ReplaceNormalizer(Regex re, std::string content)
      : re_(std::move(re)), content_(std::move(content)) {}
  void Normalize(std::string* s) const override { Run(s, nullptr); }
  // HF inserts the content after the match: it takes the alignment of the match's last byte.
  void NormalizeAligned(std::string* s, Alignment* align) const override { Run(s, align); }

 private:
  void Run(std::string* s, Alignment* align) const {
    if (align && align->size() != s->size()) align = nullptr;
    std::vector<Match> matches;
    re_.FindAll(*s, &matches);
    if (matches.empty()) return;
    std::string out;
    Alignment out_align;
    size_t prev = 0;
    for (const Match& m : matches) {
      out.append(*s, prev, m.start - prev);
      out += content_;
      if (align) {
        out_align.insert(out_align.end(), align->begin() + prev, align->begin() + m.start);
        const size_t last = m.end > 0 ? m.end - 1 : 0;
        out_align.insert(out_align.end(), content_.size(),
                         align->empty() ? Align{} : (*align)[std::min(last, align->size() - 1)]);
      }
      prev = m.end;
    }
    out.append(*s, prev, std::string::npos);
    s->swap(out);
    if (align) {
      out_align.insert(out_align.end(), align->begin() + prev, align->end());
      align->swap(out_align);
    }
  }

  Regex re_;
  std::string content_;
};

class PrependNormalizer final : public Normalizer {
 public:
  explicit PrependNormalizer(std::string prefix) : prefix_(std::move(prefix)) {}
  void Normalize(std::string* s) const override {
    if (!s->empty()) s->insert(0, prefix_);
  }
  // The prefix shares the first character's alignment.
  void NormalizeAligned(std::string* s, Alignment* align) const override {
    if (s->empty() || align->size() != s->size()) return Normalize(s);
    align->insert(align->begin(), prefix_.size(), align->front());
    s->insert(0, prefix_);
  }

 private:
  std::string prefix_;
};

class StripNormalizer final : public Normalizer {
 public:
  StripNormalizer(bool left, bool right) : left_(left), right_(right) {}
  void Normalize(std::string* s) const override {
    const auto [b, e] = Kept(*s);
    *s = s->substr(b, e - b);
  }
  // The kept characters keep their alignments.
  void NormalizeAligned(std::string* s, Alignment* align) const override {
    const auto [b, e] = Kept(*s);
    if (align->size() == s->size()) *align = Alignment(align->begin() + b, align->begin() + e);
    *s = s->substr(b, e - b);
  }

 private:
  // The byte range left once the leading and trailing whitespace goes.
  std::pair<size_t, size_t> Kept(std::string_view s) const {
    size_t b = 0, e = s.size();
    if (left_) {
      size_t n = 1;
      while (b < e && IsWhitespace(DecodeAt(s, b, &n))) b += n;
    }
    if (right_) {
      while (e > b) {
        size_t start = e - 1;
        while (start > b && (static_cast<uint8_t>(s[start]) & 0xC0) == 0x80) --start;
        size_t n = 1;
        if (!IsWhitespace(DecodeAt(s, start, &n))) break;
        e = start;
      }
    }
    return {b, e};
  }
  bool left_, right_;
};

bool IsChineseChar(uint32_t c) {
  return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) ||
         (c >= 0x20000 && c <= 0x2A6DF) || (c >= 0x2A700 && c <= 0x2B73F) ||
         (c >= 0x2B740 && c <= 0x2B81F) || (c >= 0x2B920 && c <= 0x2CEAF) ||
         (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x2F800 && c <= 0x2FA1F);
}

class BertNormalizer final : public Normalizer {
 public:
  BertNormalizer(bool clean_text, bool chinese, bool strip_accents, bool lowercase)
      : clean_text_(clean_text),
        chinese_(chinese),
        strip_accents_(strip_accents),
        lowercase_(lowercase) {}
  void Normalize(std::string* s) const override {
    if (clean_text_) CleanText(s);
    if (chinese_) PadChinese(s);
    if (strip_accents_) {
      *s = UnicodeNormalize(*s, NormalForm::kNfd);
      Filter(s, IsNonspacingMark);
    }
    if (lowercase_) *s = Lowercase(*s);
  }

 private:
  static void CleanText(std::string* s) {
    std::string out;
    out.reserve(s->size());
    for (size_t i = 0; i < s->size();) {
      size_t n = 1;
      const uint32_t cp = DecodeAt(*s, i, &n);
      // Controls go first (U+0085 is both a control and White_Space); \t \n \r are spaces.
      const bool ws = cp == '\t' || cp == '\n' || cp == '\r' || IsWhitespace(cp);
      const bool control = cp != '\t' && cp != '\n' && cp != '\r' && IsOther(cp);
      if (cp == 0 || cp == 0xFFFD || control) {
        // dropped
      } else if (ws) {
        out += ' ';
      } else {
        out.append(*s, i, n);
      }
      i += n;
    }
    s->swap(out);
  }
  static void PadChinese(std::string* s) {
    std::string out;
    out.reserve(s->size() + s->size() / 2);
    for (size_t i = 0; i < s->size();) {
      size_t n = 1;
      const uint32_t cp = DecodeAt(*s, i, &n);
      const bool pad = IsChineseChar(cp);
      if (pad) out += ' ';
      out.append(*s, i, n);
      if (pad) out += ' ';
      i += n;
    }
    s->swap(out);
  }
  bool clean_text_, chinese_, strip_accents_, lowercase_;
};

class SequenceNormalizer final : public Normalizer {
 public:
  explicit SequenceNormalizer(std::vector<std::unique_ptr<Normalizer>> steps)
      : steps_(std::move(steps)) {}
  void Normalize(std::string* s) const override {
    for (const auto& n : steps_) n->Normalize(s);
  }
  void NormalizeAligned(std::string* s, Alignment* align) const override {
    for (const auto& n : steps_) n->NormalizeAligned(s, align);
  }

 private:
  std::vector<std::unique_ptr<Normalizer>> steps_;
};

}  // namespace

void Normalizer::NormalizeAligned(std::string* s, Alignment* align) const {
  std::string out = *s;
  Normalize(&out);
  if (out == *s) return;  // unchanged text keeps its alignment
  if (align->size() == s->size()) {
    *align = AlignByCharacters(*s, *align, out, [this](std::string_view piece) {
      std::string p(piece);
      Normalize(&p);
      return p;
    });
  }
  s->swap(out);
}

std::unique_ptr<Normalizer> MakeNormalizer(const Json& j, const std::string& where, int depth) {
  if (j.is_null()) return nullptr;
  KILN_CHECK(depth < kMaxDepth, where, ": Sequence nested too deeply");
  const std::string type = TypeOf(j, where);
  if (type == "NFC") return std::make_unique<UnicodeNormalizer>(NormalForm::kNfc);
  if (type == "NFD") return std::make_unique<UnicodeNormalizer>(NormalForm::kNfd);
  if (type == "NFKC") return std::make_unique<UnicodeNormalizer>(NormalForm::kNfkc);
  if (type == "NFKD") return std::make_unique<UnicodeNormalizer>(NormalForm::kNfkd);
  if (type == "Lowercase") return std::make_unique<LowercaseNormalizer>();
  if (type == "StripAccents") return std::make_unique<StripAccentsNormalizer>();
  if (type == "Replace") {
    return std::make_unique<ReplaceNormalizer>(MakePattern(j, where),
                                               GetString(j, "content", where));
  }
  if (type == "Prepend") return std::make_unique<PrependNormalizer>(GetString(j, "prepend", where));
  if (type == "Strip") {
    return std::make_unique<StripNormalizer>(OptBool(j, "strip_left", where, true),
                                             OptBool(j, "strip_right", where, true));
  }
  if (type == "BertNormalizer") {
    const bool lowercase = OptBool(j, "lowercase", where, true);
    const Json* sa = OptField(j, "strip_accents");
    const bool strip = sa == nullptr ? lowercase : OptBool(j, "strip_accents", where, lowercase);
    return std::make_unique<BertNormalizer>(OptBool(j, "clean_text", where, true),
                                            OptBool(j, "handle_chinese_chars", where, true), strip,
                                            lowercase);
  }
  if (type == "Sequence") {
    const Json& list = Field(j, "normalizers", where);
    KILN_CHECK(list.is_array(), where, ".normalizers: expected an array");
    std::vector<std::unique_ptr<Normalizer>> steps;
    for (size_t i = 0; i < list.size(); ++i) {
      auto n = MakeNormalizer(list[i], StrCat(where, ".normalizers[", i, "]"), depth + 1);
      if (n) steps.push_back(std::move(n));
    }
    return std::make_unique<SequenceNormalizer>(std::move(steps));
  }
  throw Error(StrCat(where, ": unsupported normalizer type '", type, "'"));
}

}  // namespace kiln::hf
