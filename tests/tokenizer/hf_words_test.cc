// EncodeWords on small tokenizer.json files (spans worked out by hand, in bytes of the original
// text), the alignment helpers behind it, and its invariants on arbitrary input. Agreement
// with HF's word_ids() / word_to_chars() on real files is tests/golden/test_tokenizer_words.py.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "tokenizer/hf/alignment.h"
#include "tokenizer/hf/text.h"
#include "tokenizer/tokenizer.h"
#include "util/utf8.h"

namespace kiln {
namespace {

using Ids = std::vector<int32_t>;
using Words = std::vector<WordSpan>;

// bert-base-uncased's pipeline over a tiny vocabulary; <tag> is a non-special added token.
const char* kBert = R"({
  "added_tokens": [
    {"id": 0, "content": "[PAD]", "special": true, "normalized": false},
    {"id": 1, "content": "[UNK]", "special": true, "normalized": false},
    {"id": 2, "content": "[CLS]", "special": true, "normalized": false},
    {"id": 3, "content": "[SEP]", "special": true, "normalized": false},
    {"id": 4, "content": "[MASK]", "special": true, "normalized": false},
    {"id": 18, "content": "<tag>", "special": false, "normalized": false}],
  "normalizer": {"type": "BertNormalizer", "clean_text": true, "handle_chinese_chars": true,
    "strip_accents": null, "lowercase": true},
  "pre_tokenizer": {"type": "BertPreTokenizer"},
  "post_processor": {"type": "BertProcessing", "sep": ["[SEP]", 3], "cls": ["[CLS]", 2]},
  "model": {"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##",
    "vocab": {"[PAD]": 0, "[UNK]": 1, "[CLS]": 2, "[SEP]": 3, "[MASK]": 4, "hello": 5, ",": 6,
      "world": 7, "!": 8, "cafe": 9, "na": 10, "##ive": 11, "un": 12, "##aff": 13, "##able": 14,
      "日": 15, "本": 16, "a": 17, "b": 19}}
})";

// Byte-level BPE (h0 e1 l2 o3 Ġ4 he5 ll6 hell7 hello8 Ġhello9) and a post-processor.
std::string ByteLevelWith(const std::string& post_processor) {
  return R"({"added_tokens": [
    {"id": 10, "content": "<s>", "special": true, "normalized": false},
    {"id": 11, "content": "</s>", "special": true, "normalized": false}],
  "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": false, "use_regex": true},
  "post_processor": )" +
         post_processor + R"(,
  "model": {"type": "BPE", "vocab": {"h": 0, "e": 1, "l": 2, "o": 3, "Ġ": 4, "he": 5, "ll": 6,
    "hell": 7, "hello": 8, "Ġhello": 9},
    "merges": ["h e", "l l", "he ll", "hell o", "Ġ hello"]}})";
}

const char* kMetaspace = R"({
  "added_tokens": [{"id": 0, "content": "<unk>", "special": true, "normalized": false}],
  "normalizer": {"type": "NFKC"},
  "pre_tokenizer": {"type": "Metaspace", "replacement": "▁", "prepend_scheme": "always", "split": true},
  "model": {"type": "BPE", "unk_token": "<unk>", "byte_fallback": true, "fuse_unk": true,
    "vocab": {"<unk>": 0, "▁": 1, "h": 2, "i": 3, "hi": 4, "▁hi": 5, "<0xC3>": 6, "<0xA9>": 7,
      "f": 8, "▁f": 9, "▁fi": 10},
    "merges": ["h i", "▁ hi", "▁ f", "▁f i"]}
})";

void ExpectConsistent(const Tokenizer& tok, std::string_view text) {
  const Words words = tok.EncodeWords(text);
  Ids ids;
  for (const WordSpan& w : words) ids.push_back(w.id);
  ASSERT_EQ(ids, tok.Encode(text, false));
  int32_t prev = -1;
  for (size_t i = 0; i < words.size(); ++i) {
    const WordSpan& w = words[i];
    EXPECT_LE(w.begin, w.end);
    EXPECT_LE(w.end, text.size());
    EXPECT_GE(w.word, prev);
    if (w.word == prev) {
      EXPECT_EQ(w.begin, words[i - 1].begin);
      EXPECT_EQ(w.end, words[i - 1].end);
    }
    prev = w.word;
  }
}

TEST(HfWordsTest, BertWordsPiecesAndUnknowns) {
  auto tok = Tokenizer::FromHfJson(kBert, "", "t.json");
  // Café and naïve are 5 and 6 bytes; 日 and 本 are words of their own; xyz is [UNK].
  const std::string text = "Hello,  World!\tCafé naïve unaffable 日本 xyz";
  EXPECT_EQ(tok->EncodeWords(text), (Words{{5, 0, 0, 5},
                                           {6, 1, 5, 6},
                                           {7, 2, 8, 13},
                                           {8, 3, 13, 14},
                                           {9, 4, 15, 20},
                                           {10, 5, 21, 27},
                                           {11, 5, 21, 27},
                                           {12, 6, 28, 37},
                                           {13, 6, 28, 37},
                                           {14, 6, 28, 37},
                                           {15, 7, 38, 41},
                                           {16, 8, 41, 44},
                                           {1, 9, 45, 48}}));
  ExpectConsistent(*tok, text);
  EXPECT_TRUE(tok->EncodeWords("").empty());
  EXPECT_TRUE(tok->EncodeWords(" \t\n").empty());
}

TEST(HfWordsTest, AddedTokensAreWordsAndSpecialTextIsNot) {
  auto tok = Tokenizer::FromHfJson(kBert, "", "t.json");
  // <tag> matches (not special); [MASK] is plain text: [, mask, ] (all unknown here).
  EXPECT_EQ(tok->EncodeWords("a<tag>b [MASK]"), (Words{{17, 0, 0, 1},
                                                       {18, 1, 1, 6},
                                                       {19, 2, 6, 7},
                                                       {1, 3, 8, 9},
                                                       {1, 4, 9, 13},
                                                       {1, 5, 13, 14}}));
}

TEST(HfWordsTest, OffsetsAreInTheTextAsGiven) {
  auto tok = Tokenizer::FromHfJson(kBert, "", "t.json");
  // The invalid byte becomes U+FFFD (3 bytes), which BERT's clean-up drops: the offsets still
  // count the one byte of the input.
  EXPECT_EQ(tok->EncodeWords("\xff"
                             "a b"),
            (Words{{17, 0, 1, 2}, {19, 1, 3, 4}}));
  EXPECT_EQ(tok->EncodeWords("a\xff"
                             "b"),
            (Words{{1, 0, 0, 3}}));  // "ab": no ##b, one unknown word
  // Control characters are dropped from the normalized text, not from the word.
  EXPECT_EQ(tok->EncodeWords("\x01"
                             "a\x02"),
            (Words{{17, 0, 1, 2}}));
}

TEST(HfWordsTest, RobertaTrimsTheSpaceOffWords) {
  // trim_offsets: "Ġhello" spans "hello", not " hello"; without it the space is in the word.
  auto roberta = Tokenizer::FromHfJson(
      ByteLevelWith(R"({"type": "RobertaProcessing", "sep": ["</s>", 11], "cls": ["<s>", 10],
          "trim_offsets": true, "add_prefix_space": false})"),
      "", "t.json");
  EXPECT_EQ(roberta->EncodeWords("hello hello"), (Words{{8, 0, 0, 5}, {9, 1, 6, 11}}));
  auto plain = Tokenizer::FromHfJson(ByteLevelWith("null"), "", "t.json");
  EXPECT_EQ(plain->EncodeWords("hello hello"), (Words{{8, 0, 0, 5}, {9, 1, 5, 11}}));
  // A word of spaces only trims to nothing (at its end).
  const Words spaces = roberta->EncodeWords("hello  hello");
  ASSERT_EQ(spaces.size(), 3u);
  EXPECT_EQ(spaces[1], (WordSpan{4, 1, 6, 6}));
  EXPECT_EQ(spaces[2], (WordSpan{9, 2, 7, 12}));
}

TEST(HfWordsTest, MetaspaceAndNfkc) {
  auto tok = Tokenizer::FromHfJson(kMetaspace, "", "t.json");
  // The ▁ added in front of each word and for each space aligns with a character of the word;
  // é falls back to bytes; the ligature ﬁ (3 bytes) becomes "fi" by NFKC.
  EXPECT_EQ(tok->EncodeWords("hi hi"), (Words{{5, 0, 0, 2}, {5, 1, 2, 5}}));
  EXPECT_EQ(tok->EncodeWords("é"), (Words{{1, 0, 0, 2}, {6, 0, 0, 2}, {7, 0, 0, 2}}));
  EXPECT_EQ(tok->EncodeWords("hi ﬁ"), (Words{{5, 0, 0, 2}, {10, 1, 2, 6}}));
}

TEST(HfAlignmentTest, CharactersGroupsAndTheProportionalRest) {
  using hf::Align;
  const std::string in = "ae\xCC\x81z";  // a, e, U+0301, z
  const hf::Alignment ident = hf::IdentityAlignment(in, 10);
  EXPECT_EQ(ident[2], (Align{12, 14}));
  EXPECT_EQ(ident[3], (Align{12, 14}));
  // NFC composes e + U+0301: the group gets both characters' range.
  auto nfc = [](std::string_view s) { return hf::UnicodeNormalize(s, hf::NormalForm::kNfc); };
  const std::string composed = nfc(in);
  const hf::Alignment a = hf::AlignByCharacters(in, ident, composed, nfc);
  EXPECT_EQ(a, (hf::Alignment{{10, 11}, {11, 14}, {11, 14}, {14, 15}}));
  // A step that maps no character alone (reversal): a short text is one group; past the
  // longest group, proportional (in range, whole characters).
  auto reverse = [](std::string_view s) { return std::string(s.rbegin(), s.rend()); };
  const std::string abcd = "abcd";
  EXPECT_EQ(hf::AlignByCharacters(abcd, hf::IdentityAlignment(abcd, 0), reverse(abcd), reverse),
            (hf::Alignment(4, Align{0, 4})));
  const std::string text = "abcdefghijklmnopqrst";
  const hf::Alignment r =
      hf::AlignByCharacters(text, hf::IdentityAlignment(text, 0), reverse(text), reverse);
  ASSERT_EQ(r.size(), 20u);
  EXPECT_EQ(r[0], (Align{0, 1}));
  EXPECT_EQ(r[19], (Align{19, 20}));
  EXPECT_EQ(hf::RangeOf(a, 0, 4), (Align{10, 15}));
}

TEST(HfAlignmentTest, RepairedToInput) {
  const std::string input =
      "a\xff"
      "b\xe2\x82"
      "c";
  const std::string repaired =
      "a\xEF\xBF\xBD"
      "b\xEF\xBF\xBD"
      "c";
  ASSERT_EQ(ValidUtf8OrReplace(input), repaired);
  const std::vector<uint32_t> map = hf::RepairedToInput(input, repaired);
  ASSERT_EQ(map.size(), repaired.size() + 1);
  EXPECT_EQ(map[1], 1u);  // U+FFFD <- \xff
  EXPECT_EQ(map[4], 2u);  // b
  EXPECT_EQ(map[5], 3u);  // U+FFFD <- \xe2\x82
  EXPECT_EQ(map[8], 5u);  // c
  EXPECT_EQ(map[9], 6u);
}

TEST(HfWordsTest, ArbitraryInputKeepsTheInvariants) {
  const std::string odd_normalizer = R"({"type": "Sequence", "normalizers": [{"type": "NFD"},
      {"type": "Replace", "pattern": {"Regex": "[ab]+"}, "content": "xy"}, {"type": "Strip"},
      {"type": "Prepend", "prepend": "▁"}, {"type": "NFC"}, {"type": "Lowercase"}]})";
  std::string odd = kMetaspace;
  odd.replace(odd.find(R"({"type": "NFKC"})"), 16, odd_normalizer);
  std::vector<std::unique_ptr<Tokenizer>> toks;
  toks.push_back(Tokenizer::FromHfJson(kBert, "", "t.json"));
  toks.push_back(Tokenizer::FromHfJson(kMetaspace, "", "t.json"));
  toks.push_back(Tokenizer::FromHfJson(odd, "", "t.json"));
  toks.push_back(Tokenizer::FromHfJson(
      ByteLevelWith(R"({"type": "ByteLevel", "trim_offsets": true})"), "", "t.json"));
  const std::vector<std::string> atoms = {"a",
                                          "b",
                                          "h",
                                          "i",
                                          " ",
                                          "  ",
                                          "\t",
                                          "\n",
                                          "\xC3\xA9",
                                          "e\xCC\x81",
                                          ",",
                                          "!",
                                          "[",
                                          "\xe6\x97\xa5",
                                          "<tag>",
                                          "[MASK]",
                                          "\xff",
                                          "\xe2\x82",
                                          "\x01",
                                          "\xEF\xAC\x81",
                                          "x",
                                          "\xcc\x88\xcc\xa3",
                                          "\xe3\x80\x80",
                                          "hello",
                                          "\xf0\x9f\x98\x80"};
  std::mt19937 rng(42);
  for (int i = 0; i < 400; ++i) {
    std::string text;
    const int n = static_cast<int>(rng() % 12);
    for (int k = 0; k < n; ++k) text += atoms[rng() % atoms.size()];
    for (const auto& tok : toks) ExpectConsistent(*tok, text);
  }
}

}  // namespace
}  // namespace kiln
