// Unigram (SentencePiece unigram LM): Viterbi over the pieces that match at each character,
// scores as log probabilities; a character no piece covers is an unknown token scored
// min_score - 10, and runs of unknown tokens fuse into one.
#include <charconv>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <unordered_set>

#include "tokenizer/hf/model.h"
#include "tokenizer/hf/text.h"
#include "util/error.h"

namespace kiln::hf {
namespace {

constexpr double kUnkPenalty = 10.0;

// The score as the HF library holds it. serde_json (without its float_roundtrip feature) reads a
// number as integer digits converted to f64 and then scaled by a power of ten, which can land
// one ulp away from the correctly rounded value nlohmann gives. Viterbi ties between equally
// scored paths depend on that ulp, so the library's arithmetic is replayed on the shortest
// digits of the value (the form both Python and Rust write).
double SerdeScore(double v) {
  char buf[64];
  const auto res = std::to_chars(buf, buf + sizeof(buf), v);
  if (res.ec != std::errc()) return v;
  const std::string_view text(buf, res.ptr - buf);
  uint64_t sig = 0;
  int exp10 = 0;
  bool neg = false, frac = false;
  size_t i = 0;
  for (; i < text.size() && text[i] != 'e'; ++i) {
    const char c = text[i];
    if (c == '-') {
      neg = true;
    } else if (c == '.') {
      frac = true;
    } else if (c >= '0' && c <= '9') {
      if (sig <= (UINT64_MAX - 9) / 10) {
        sig = sig * 10 + static_cast<uint64_t>(c - '0');
        exp10 -= frac ? 1 : 0;
      } else if (!frac) {
        ++exp10;
      }
    } else {
      return v;  // inf, nan
    }
  }
  if (i < text.size()) exp10 += std::atoi(std::string(text.substr(i + 1)).c_str());
  double f = static_cast<double>(sig);
  while (exp10 < -308) {
    if (f == 0.0) break;
    f /= 1e308;
    exp10 += 308;
  }
  if (exp10 > 308) return v;
  const double pow =
      std::strtod(("1e" + std::to_string(exp10 < 0 ? -exp10 : exp10)).c_str(), nullptr);
  f = exp10 >= 0 ? f * pow : f / pow;
  return neg ? -f : f;
}

class UnigramModel final : public Model {
 public:
  UnigramModel(const Json& j, const std::string& where);
  void Tokenize(std::string_view text, std::vector<int32_t>* out) const override;

 private:
  struct Node {
    double score = 0;
    int64_t start = -1;  // -1: no path ends here yet
    int32_t id = -1;
  };
  void Emit(std::string_view piece, std::vector<int32_t>* out) const;
  int32_t UnkId() const {
    KILN_CHECK(unk_id_ >= 0,
               "tokenizer.json: the text needs the Unigram model's unk_id, "
               "which is not set");
    return unk_id_;
  }

  std::vector<double> scores_;
  std::unordered_set<std::string> prefixes_;  // proper prefixes of pieces
  std::vector<int32_t> byte_ids_;
  double min_score_ = 0;
  int32_t unk_id_ = -1;
  bool byte_fallback_ = false;
};

UnigramModel::UnigramModel(const Json& j, const std::string& where) {
  const std::string vw = FieldPath(where, "vocab");
  const Json& vocab = Field(j, "vocab", where);
  KILN_CHECK(vocab.is_array() && !vocab.empty(), vw, ": expected a non-empty array");
  KILN_CHECK(vocab.size() < (size_t{1} << 30), vw, ": too many pieces");
  min_score_ = std::numeric_limits<double>::infinity();
  for (size_t i = 0; i < vocab.size(); ++i) {
    const Json& e = vocab[i];
    const std::string at = StrCat(vw, "[", i, "]");
    KILN_CHECK(e.is_array() && e.size() == 2 && e[1].is_number(), at,
               ": expected [\"piece\", score]");
    const std::string& piece = AsString(e[0], at);
    KILN_CHECK(!piece.empty(), at, ": empty piece");
    vocab_.text.push_back(piece);
    scores_.push_back(SerdeScore(e[1].get<double>()));
    min_score_ = std::min(min_score_, scores_.back());
    for (size_t n = 1; n < piece.size(); ++n) prefixes_.insert(piece.substr(0, n));
  }
  vocab_.score.assign(vocab_.text.size(), 0.0f);
  vocab_.attr.assign(vocab_.text.size(), tok::kAttrNormal);
  vocab_.Index();
  unk_id_ = static_cast<int32_t>(
      OptInt(j, "unk_id", where, -1, static_cast<int64_t>(vocab.size()) - 1, -1));
  if (unk_id_ >= 0) unk_token_ = vocab_.text[unk_id_];
  byte_fallback_ = OptBool(j, "byte_fallback", where, false);
  byte_ids_ = ByteFallbackIds(vocab_);
}

void UnigramModel::Tokenize(std::string_view text, std::vector<int32_t>* out) const {
  const size_t size = text.size();
  std::vector<Node> best(size + 1);
  best[0].start = 0;
  const double unk_score = min_score_ - kUnkPenalty;
  auto relax = [&](size_t from, size_t to, int32_t id, double score) {
    Node& node = best[to];
    const double candidate = best[from].score + score;
    if (node.start < 0 || candidate > node.score)
      node = {candidate, static_cast<int64_t>(from), id};
  };
  for (size_t start = 0; start < size;) {
    const size_t char_len = CharLen(text, start);
    bool single = false;
    for (size_t end = start + 1; end <= size; ++end) {
      const std::string_view sub = text.substr(start, end - start);
      if (const int32_t id = vocab_.Find(sub); id >= 0) {
        relax(start, end, id, scores_[id]);
        if (end - start == char_len) single = true;
      }
      if (!prefixes_.contains(std::string(sub))) break;
    }
    if (!single) relax(start, start + char_len, UnkId(), unk_score);
    start += char_len;
  }
  // Backtrack, fusing runs of unknown tokens.
  std::vector<std::string_view> pieces;
  size_t unk_begin = 0, unk_end = 0;
  bool in_unk = false;
  for (size_t end = size; end > 0;) {
    const Node& node = best[end];
    const auto start = static_cast<size_t>(node.start);
    if (unk_id_ >= 0 && node.id == unk_id_) {
      if (!in_unk) unk_end = end;
      in_unk = true;
      unk_begin = start;
    } else {
      if (in_unk) pieces.push_back(text.substr(unk_begin, unk_end - unk_begin));
      in_unk = false;
      pieces.push_back(text.substr(start, end - start));
    }
    end = start;
  }
  if (in_unk) pieces.push_back(text.substr(unk_begin, unk_end - unk_begin));
  for (size_t i = pieces.size(); i-- > 0;) Emit(pieces[i], out);
}

void UnigramModel::Emit(std::string_view piece, std::vector<int32_t>* out) const {
  if (const int32_t id = vocab_.Find(piece); id >= 0) {
    out->push_back(id);
    return;
  }
  if (byte_fallback_) {
    bool all = true;
    for (char c : piece) all = all && byte_ids_[static_cast<uint8_t>(c)] >= 0;
    if (all) {
      for (char c : piece) out->push_back(byte_ids_[static_cast<uint8_t>(c)]);
      return;
    }
  }
  out->push_back(UnkId());
}

}  // namespace

std::unique_ptr<Model> MakeUnigramModel(const Json& j, const std::string& where) {
  return std::make_unique<UnigramModel>(j, where);
}

}  // namespace kiln::hf
