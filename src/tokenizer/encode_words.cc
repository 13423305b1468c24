// Tokenizer::EncodeWords for vocabularies without offsets (GGUF): the token pieces are matched
// against the text to find each token's bytes, and words are cut where a piece begins with
// whitespace, as the GPT-2 and SentencePiece pre-tokenizers attach a word's space to its start.
#include <algorithm>

#include "tokenizer/tokenizer.h"

namespace kiln {
namespace {

bool IsSpaceByte(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

}  // namespace

std::vector<WordSpan> Tokenizer::EncodeWords(std::string_view text) const {
  const std::vector<int32_t> ids = Encode(text, false);
  std::vector<WordSpan> out;
  out.reserve(ids.size());
  size_t pos = 0;
  // Unknown tokens have no piece: the bytes up to the next piece that is found belong to them.
  size_t pending = 0;
  bool after_special = true;
  int32_t word = -1;
  for (int32_t id : ids) {
    const std::string piece = TokenPiece(id);
    std::string_view p = piece;
    // SentencePiece's prefix space stands for no byte of the text.
    if (!p.empty() && p[0] == ' ' && (pos >= text.size() || text[pos] != ' ')) p.remove_prefix(1);
    const bool special = IsSpecial(id) || piece.empty();
    if (special || after_special || (!p.empty() && IsSpaceByte(p[0])) ||
        (!piece.empty() && piece[0] == ' ')) {
      ++word;
    }
    size_t begin = pos;
    if (!p.empty()) {
      if (text.compare(std::min(pos, text.size()), p.size(), p) != 0 && pending > 0) {
        const size_t found = text.find(p, pos);
        if (found != std::string_view::npos) begin = found;
      }
      for (size_t i = out.size() - pending; i < out.size(); ++i) out[i].end = begin;
      pending = 0;
    } else {
      ++pending;
    }
    const size_t end = std::min(text.size(), begin + p.size());
    begin = std::min(begin, end);
    out.push_back({id, word, static_cast<uint32_t>(begin), static_cast<uint32_t>(end)});
    pos = end;
    after_special = special;
  }
  for (size_t i = out.size() - pending; i < out.size(); ++i) out[i].end = text.size();
  // A word spans its tokens, less leading whitespace.
  for (size_t i = 0; i < out.size();) {
    size_t j = i;
    while (j < out.size() && out[j].word == out[i].word) ++j;
    uint32_t begin = out[i].begin;
    const uint32_t end = std::max(out[j - 1].end, begin);
    while (begin < end && IsSpaceByte(text[begin])) ++begin;
    for (size_t k = i; k < j; ++k) {
      out[k].begin = begin;
      out[k].end = end;
    }
    i = j;
  }
  return out;
}

}  // namespace kiln
