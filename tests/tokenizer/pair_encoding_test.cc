// The defaults of Tokenizer::Layout and Tokenizer::EncodeWords, for GGUF vocabularies (which
// keep no offsets and define no pair), and the assembly helpers on a layout made by hand.
#include "tokenizer/pair_encoding.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

#include "tokenizer/tokenizer.h"

namespace kiln {
namespace {

using Ids = std::vector<int32_t>;
using Words = std::vector<WordSpan>;

// SentencePiece-style vocabulary: <unk>0 <s>1 </s>2, bytes 3..258, then ▁ a b ab ▁ab.
VocabSpec SpmSpec(bool add_eos) {
  VocabSpec s;
  s.source = "spm-test";
  s.model = "llama";
  auto add = [&](std::string text, float score, int type) {
    s.tokens.push_back(std::move(text));
    s.scores.push_back(score);
    s.token_types.push_back(type);
  };
  add("<unk>", 0, 2);
  add("<s>", 0, 3);
  add("</s>", 0, 3);
  for (int b = 0; b < 256; ++b) {
    char buf[8];
    std::snprintf(buf, sizeof(buf), "<0x%02X>", b);
    add(buf, 0, 6);
  }
  add("\xE2\x96\x81", -10, 1);
  add("a", -10, 1);
  add("b", -10, 1);
  add("ab", -2, 1);
  add("\xE2\x96\x81"
      "ab",
      -1, 1);
  s.add_bos = true;
  s.add_eos = add_eos;
  return s;
}

constexpr int32_t kAb = 262, kSpaceAb = 263;

TEST(PairEncodingTest, AssembleByHand) {
  SpecialLayout l;
  l.single_before = {{7, 0}};
  l.single_after = {{8, 0}};
  l.single_type = 3;
  l.pair_before = {{7, 0}};
  l.pair_middle = {{8, 0}, {8, 1}};
  l.pair_after = {{9, 1}};
  l.type_a = 0;
  l.type_b = 1;
  EXPECT_EQ(AssembleSingle(l, Ids{1, 2}), (EncodedInput{{7, 1, 2, 8}, {0, 3, 3, 0}}));
  EXPECT_EQ(AssemblePair(l, Ids{1}, Ids{2, 3}),
            (EncodedInput{{7, 1, 8, 8, 2, 3, 9}, {0, 0, 0, 1, 1, 1, 1}}));
  EXPECT_EQ(NumSpecialTokens(l, false), 2u);
  EXPECT_EQ(NumSpecialTokens(l, true), 4u);
  EXPECT_EQ(AssembleSingle(SpecialLayout{}, Ids{}), EncodedInput{});
}

TEST(PairEncodingTest, GgufLayoutIsBosEosAroundBoth) {
  auto bos_only = Tokenizer::FromVocab(SpmSpec(false));
  const SpecialLayout l = bos_only->Layout();
  EXPECT_EQ(l.single_before, (std::vector<LayoutToken>{{1, 0}}));
  EXPECT_TRUE(l.single_after.empty());
  EXPECT_EQ(AssembleSingle(l, bos_only->Encode("ab", false)).ids, bos_only->Encode("ab", true));
  auto both = Tokenizer::FromVocab(SpmSpec(true));
  EXPECT_EQ(AssemblePair(both->Layout(), Ids{kAb}, Ids{kSpaceAb}),
            (EncodedInput{{1, kAb, kSpaceAb, 2}, {0, 0, 0, 0}}));
}

TEST(PairEncodingTest, GgufWordsFollowThePieces) {
  auto tok = Tokenizer::FromVocab(SpmSpec(false));
  // "▁ab▁ab": the prefix space stands for nothing; the second word starts at its space, which
  // the span leaves out.
  EXPECT_EQ(tok->EncodeWords("ab ab"), (Words{{kSpaceAb, 0, 0, 2}, {kSpaceAb, 1, 3, 5}}));
  // 日 falls back to its three bytes, which continue the word.
  const Words w = tok->EncodeWords("ab\xe6\x97\xa5");
  ASSERT_EQ(w.size(), 4u);
  for (const WordSpan& s : w) EXPECT_EQ(std::pair(s.word, s.end), std::pair(0, 5u));
  EXPECT_TRUE(tok->EncodeWords("").empty());
}

}  // namespace
}  // namespace kiln
