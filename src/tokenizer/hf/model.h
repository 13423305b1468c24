// tokenizer.json "model": the subword algorithm and its vocabulary. BPE (byte-level or
// SentencePiece-style with byte_fallback), WordPiece and Unigram, as the HF tokenizers library
// runs them.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/hf/json_fields.h"
#include "tokenizer/models.h"

namespace kiln::hf {

class Model {
 public:
  virtual ~Model() = default;
  // Appends the ids of one pre-tokenized piece (non-empty). Throws kiln::Error when the piece
  // needs an unknown token the model does not have.
  virtual void Tokenize(std::string_view piece, std::vector<int32_t>* out) const = 0;

  // Dense table by id; ids the file never names have empty text.
  const tok::Vocab& vocab() const { return vocab_; }
  // "" when the file names none.
  const std::string& unk_token() const { return unk_token_; }

 protected:
  tok::Vocab vocab_;
  std::string unk_token_;
};

// Dispatches on "type". Throws kiln::Error naming `where` on bad input.
std::unique_ptr<Model> MakeModel(const Json& j, const std::string& where);

std::unique_ptr<Model> MakeBpeModel(const Json& j, const std::string& where);
std::unique_ptr<Model> MakeWordPieceModel(const Json& j, const std::string& where);
std::unique_ptr<Model> MakeUnigramModel(const Json& j, const std::string& where);

// {"token": id, ...} -> vocab.text by id (checked: ids in range, not too sparse).
void ReadVocabMap(const Json& j, const std::string& where, tok::Vocab* vocab);
// Id of the <0xXX> token of each byte, -1 where absent.
std::vector<int32_t> ByteFallbackIds(const tok::Vocab& vocab);

}  // namespace kiln::hf
