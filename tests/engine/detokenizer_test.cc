#include "tokenizer/detokenizer.h"

#include <gtest/gtest.h>

#include <vector>

#include "engine/fake_tokenizer.h"
#include "util/utf8.h"

namespace kiln::testing {
namespace {

using T = FakeTokenizer;

std::vector<std::string> Stream(const Tokenizer* tok, bool skip, const std::vector<int32_t>& ids) {
  Detokenizer d(tok, skip);
  std::vector<std::string> out;
  for (int32_t id : ids) {
    std::string text;
    d.Push(id, text);
    out.push_back(text);
  }
  std::string tail;
  d.Flush(tail);
  out.push_back(tail);
  return out;
}

TEST(Detokenizer, ReleasesMultibyteCharactersWhole) {
  T tok;
  const std::vector<int32_t> ids = {T::kA,     T::kEAcute1, T::kEAcute2, T::kEuro12,
                                    T::kEuro3, T::kSmile12, T::kSmile34, T::kEuro};
  const auto parts = Stream(&tok, true, ids);
  EXPECT_EQ(parts, (std::vector<std::string>{"a", "", "é", "", "€", "", "😀", "€", ""}));
}

TEST(Detokenizer, ConcatenationEqualsDecodeEvenWithInvalidBytes) {
  T tok;
  const std::vector<int32_t> ids = {T::kEAcute1, T::kA,   T::kBadByte, T::kEuro12, T::kHel,
                                    T::kSmile12, T::kBos, T::kSmile34, T::kEuro12};
  for (bool skip : {true, false}) {
    std::string all;
    for (const std::string& p : Stream(&tok, skip, ids)) {
      EXPECT_EQ(ValidUtf8OrReplace(p), p);
      all += p;
    }
    EXPECT_EQ(all, tok.Decode(ids, skip)) << skip;
  }
}

TEST(Detokenizer, SpecialTokensFollowSkipSpecial) {
  T tok;
  const std::vector<int32_t> ids = {T::kA, T::kEnd, T::kUnk, T::kB};
  std::string skipped, shown;
  for (const auto& p : Stream(&tok, true, ids)) skipped += p;
  for (const auto& p : Stream(&tok, false, ids)) shown += p;
  EXPECT_EQ(skipped, "ab");
  EXPECT_EQ(shown, "a<|end|><unk>b");
  EXPECT_EQ(Detokenizer::StandaloneText(tok, T::kEAcute1), "\xEF\xBF\xBD");
  EXPECT_EQ(Detokenizer::StandaloneText(tok, T::kEnd), "<|end|>");
}

TEST(Detokenizer, IdsPastTheTokenizersVocabularyGiveNoText) {
  T tok;  // 64 tokens; a model may have more rows than that
  EXPECT_EQ(Stream(&tok, true, {T::kA, 70, T::kB}), (std::vector<std::string>{"a", "", "b", ""}));
  EXPECT_FALSE(Detokenizer::IsSpecial(&tok, 70));
  EXPECT_EQ(Detokenizer::StandaloneText(tok, 70), "");
}

TEST(Detokenizer, NoTokenizerNoText) {
  EXPECT_EQ(Stream(nullptr, true, {1, 2}), (std::vector<std::string>{"", "", ""}));
}

}  // namespace
}  // namespace kiln::testing
