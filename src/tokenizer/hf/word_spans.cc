#include "tokenizer/hf/word_spans.h"

#include <algorithm>

#include "tokenizer/hf/text.h"

namespace kiln::hf {
namespace {

constexpr uint32_t kByteLevelSpace = 0x120;  // "Ġ", ByteLevel's stand-in for ' '

bool TrimmedChar(uint32_t cp) { return cp == kByteLevelSpace || IsWhitespace(cp); }

// Characters at the start (or end) of `s` that trim_offsets drops.
uint32_t CountTrimmed(std::string_view s, bool from_end) {
  std::vector<uint32_t> cps;
  ToCodepoints(s, &cps);
  uint32_t n = 0;
  if (from_end) {
    for (size_t i = cps.size(); i-- > 0 && TrimmedChar(cps[i]);) ++n;
  } else {
    for (size_t i = 0; i < cps.size() && TrimmedChar(cps[i]); ++i) ++n;
  }
  return n;
}

bool IsContinuation(char c) { return (static_cast<uint8_t>(c) & 0xC0) == 0x80; }

}  // namespace

void WordRecorder::Add(int32_t id, Align range, std::string_view value) {
  const uint32_t size = static_cast<uint32_t>(text_.size());
  const uint32_t begin = std::min(range.begin, size);
  Token t{id, word_, begin, std::clamp(range.end, begin, size), 0, 0};
  if (!trim_passes_.empty()) {
    t.leading = CountTrimmed(value, false);
    t.trailing = CountTrimmed(value, true);
  }
  tokens_.push_back(t);
}

void WordRecorder::AddAddedToken(int32_t id, Align range, std::string_view matched) {
  Add(id, range, matched);
  ++word_;
}

void WordRecorder::AddPiece(const Piece& piece, const std::vector<int32_t>& ids, size_t first,
                            Align fallback) {
  const bool aligned = Aligned(piece);
  const Align whole = aligned ? RangeOf(piece.align, 0, piece.text.size()) : fallback;
  // Trimming needs each token's own bytes: the tokens' strings, when they spell the piece
  // (byte-level BPE, whose tokens trim_offsets is for). Otherwise each token gets the whole
  // piece, which is exact for the word span whenever the tokens cover the piece.
  size_t pos = 0;
  bool spelled = aligned && !trim_passes_.empty();
  for (size_t i = first; spelled && i < ids.size(); ++i) {
    const std::string& s = token_text_[ids[i]];
    spelled = !s.empty() && piece.text.compare(pos, s.size(), s) == 0;
    pos += s.size();
  }
  spelled = spelled && pos == piece.text.size();
  pos = 0;
  for (size_t i = first; i < ids.size(); ++i) {
    const std::string& s = token_text_[ids[i]];
    if (spelled) {
      Add(ids[i], RangeOf(piece.align, pos, pos + s.size()), s);
      pos += s.size();
    } else {
      Add(ids[i], whole, s);
    }
  }
  ++word_;
}

// HF's ByteLevel process_offsets, in characters of the original text.
void WordRecorder::Trim(bool add_prefix_space, std::vector<Token>* tokens) const {
  for (size_t i = 0; i < tokens->size(); ++i) {
    Token& t = (*tokens)[i];
    uint32_t leading = t.leading;
    if (leading > 0) {
      const bool is_first = i == 0 || t.begin == 0;
      if (is_first && add_prefix_space && leading == 1) leading = 0;
      for (; leading > 0 && t.begin < t.end; --leading) {
        do {
          ++t.begin;
        } while (t.begin < t.end && IsContinuation(text_[t.begin]));
      }
    }
    if (t.trailing > 0) {
      // Only when the end has that many characters before it (HF: offsets.1 >= trailing).
      uint32_t end = t.end, n = 0;
      while (n < t.trailing && end > 0) {
        do {
          --end;
        } while (end > 0 && IsContinuation(text_[end]));
        ++n;
      }
      if (n == t.trailing) t.end = std::max(end, t.begin);
    }
  }
}

std::vector<WordSpan> WordRecorder::Finish(std::string_view input) const {
  std::vector<Token> tokens = tokens_;
  for (bool add_prefix_space : trim_passes_) Trim(add_prefix_space, &tokens);
  std::vector<uint32_t> map;
  if (input != text_) map = RepairedToInput(input, text_);
  auto to_input = [&](uint32_t off) {
    off = std::min<uint32_t>(off, static_cast<uint32_t>(text_.size()));
    return map.empty() ? off : map[off];
  };
  std::vector<WordSpan> out;
  out.reserve(tokens.size());
  for (size_t i = 0; i < tokens.size();) {
    size_t j = i;
    while (j < tokens.size() && tokens[j].word == tokens[i].word) ++j;
    const uint32_t begin = to_input(tokens[i].begin);
    const uint32_t end = std::max(begin, to_input(tokens[j - 1].end));
    for (size_t k = i; k < j; ++k) out.push_back({tokens[k].id, tokens[k].word, begin, end});
    i = j;
  }
  return out;
}

}  // namespace kiln::hf
