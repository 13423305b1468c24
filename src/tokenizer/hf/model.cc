#include "tokenizer/hf/model.h"

#include <algorithm>

#include "util/error.h"

namespace kiln::hf {

std::unique_ptr<Model> MakeModel(const Json& j, const std::string& where) {
  CheckObject(j, where);
  std::string type;
  if (OptField(j, "type") != nullptr) {
    type = TypeOf(j, where);
  } else {  // files from old versions of the library name no type
    type = OptField(j, "merges") ? "BPE" : OptField(j, "unk_id") ? "Unigram" : "WordPiece";
  }
  if (type == "BPE") return MakeBpeModel(j, where);
  if (type == "WordPiece") return MakeWordPieceModel(j, where);
  if (type == "Unigram") return MakeUnigramModel(j, where);
  throw Error(StrCat(where, ": unsupported model type '", type, "' (BPE, WordPiece, Unigram)"));
}

void ReadVocabMap(const Json& j, const std::string& where, tok::Vocab* vocab) {
  KILN_CHECK(j.is_object(), where, ": expected an object {token: id}");
  KILN_CHECK(!j.empty(), where, ": the vocabulary is empty");
  // Ids are dense in real files; the bound keeps a hostile file from forcing a huge table.
  const int64_t max_id = static_cast<int64_t>(j.size()) * 2 + 1024;
  int64_t top = -1;
  for (auto it = j.begin(); it != j.end(); ++it) {
    top = std::max(top, AsInt(it.value(), StrCat(where, "[\"", it.key(), "\"]"), 0, max_id));
  }
  vocab->text.assign(static_cast<size_t>(top + 1), std::string());
  for (auto it = j.begin(); it != j.end(); ++it) {
    const auto id = static_cast<size_t>(it.value().get<int64_t>());
    KILN_CHECK(!it.key().empty(), where, ": empty token text (id ", id, ")");
    KILN_CHECK(vocab->text[id].empty(), where, ": id ", id, " given to both '", vocab->text[id],
               "' and '", it.key(), "'");
    vocab->text[id] = it.key();
  }
  vocab->score.assign(vocab->text.size(), 0.0f);
  vocab->attr.assign(vocab->text.size(), tok::kAttrNormal);
  vocab->Index();
}

std::vector<int32_t> ByteFallbackIds(const tok::Vocab& vocab) {
  std::vector<int32_t> ids(256, -1);
  static constexpr char kHex[] = "0123456789ABCDEF";
  for (int b = 0; b < 256; ++b) {
    const std::string name = {'<', '0', 'x', kHex[b >> 4], kHex[b & 15], '>'};
    ids[b] = vocab.Find(name);
  }
  return ids;
}

}  // namespace kiln::hf
