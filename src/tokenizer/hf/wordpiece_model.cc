// WordPiece (BERT): greedy longest-match-first over the word; pieces after the first carry the
// continuing-subword prefix ("##"); a word with an unmatchable rest is one unknown token.
#include "tokenizer/hf/model.h"
#include "tokenizer/hf/text.h"
#include "util/error.h"

namespace kiln::hf {
namespace {

class WordPieceModel final : public Model {
 public:
  WordPieceModel(const Json& j, const std::string& where) {
    ReadVocabMap(Field(j, "vocab", where), FieldPath(where, "vocab"), &vocab_);
    unk_token_ = OptString(j, "unk_token", where).value_or("[UNK]");
    prefix_ = OptString(j, "continuing_subword_prefix", where).value_or("##");
    max_chars_ = OptInt(j, "max_input_chars_per_word", where, 0, int64_t{1} << 40, 100);
    unk_id_ = vocab_.Find(unk_token_);
  }

  void Tokenize(std::string_view word, std::vector<int32_t>* out) const override {
    if (CountChars(word) > max_chars_) {
      out->push_back(UnkId());
      return;
    }
    const size_t first = out->size();
    std::string buf;
    for (size_t start = 0; start < word.size();) {
      size_t end = word.size();
      int32_t found = -1;
      while (start < end) {
        std::string_view sub = word.substr(start, end - start);
        if (start > 0) {
          buf.assign(prefix_);
          buf.append(sub);
          sub = buf;
        }
        found = vocab_.Find(sub);
        if (found >= 0) break;
        end = PrevCharStart(word, end);
      }
      if (found < 0) {
        out->resize(first);
        out->push_back(UnkId());
        return;
      }
      out->push_back(found);
      start = end;
    }
  }

 private:
  static int64_t CountChars(std::string_view s) {
    int64_t n = 0;
    for (char c : s) n += (static_cast<uint8_t>(c) & 0xC0) != 0x80;
    return n;
  }
  static size_t PrevCharStart(std::string_view s, size_t end) {
    do {
      --end;
    } while (end > 0 && (static_cast<uint8_t>(s[end]) & 0xC0) == 0x80);
    return end;
  }
  int32_t UnkId() const {
    KILN_CHECK(unk_id_ >= 0, "tokenizer.json: WordPiece unk_token '", unk_token_,
               "' is not in the vocabulary");
    return unk_id_;
  }

  std::string prefix_;
  int64_t max_chars_ = 100;
  int32_t unk_id_ = -1;
};

}  // namespace

std::unique_ptr<Model> MakeWordPieceModel(const Json& j, const std::string& where) {
  return std::make_unique<WordPieceModel>(j, where);
}

}  // namespace kiln::hf
