#include "tokenizer/detokenizer.h"

#include "tokenizer/tokenizer.h"

namespace kiln {
namespace {

bool Known(const Tokenizer& tokenizer, int32_t id) {
  return id >= 0 && id < tokenizer.vocab_size();
}

std::string RawText(const Tokenizer& tokenizer, int32_t id) {
  if (!Known(tokenizer, id)) return {};
  std::string piece = tokenizer.TokenPiece(id);
  if (piece.empty() && tokenizer.IsSpecial(id)) piece = std::string(tokenizer.TokenText(id));
  return piece;
}

}  // namespace

Detokenizer::Detokenizer(const Tokenizer* tokenizer, bool skip_special)
    : tokenizer_(tokenizer), skip_special_(skip_special) {}

void Detokenizer::Push(int32_t id, std::string& out) {
  if (tokenizer_ == nullptr) return;
  if (skip_special_ && IsSpecial(tokenizer_, id)) return;
  out += buffer_.Push(RawText(*tokenizer_, id));
}

void Detokenizer::Flush(std::string& out) { out += buffer_.Flush(); }

bool Detokenizer::IsSpecial(const Tokenizer* tokenizer, int32_t id) {
  return tokenizer != nullptr && Known(*tokenizer, id) && tokenizer->IsSpecial(id);
}

std::string Detokenizer::StandaloneText(const Tokenizer& tokenizer, int32_t id) {
  return ValidUtf8OrReplace(RawText(tokenizer, id));
}

}  // namespace kiln
