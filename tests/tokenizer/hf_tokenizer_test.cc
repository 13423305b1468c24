// tokenizer.json support beyond what the golden tests cover: the LoadTokenizer factory,
// tokenizer_config.json (special tokens, add_bos/eos_token, clean-up, chat template), stream
// pieces and concurrent use. Exact agreement with the HF library is tests/golden's job.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "tokenizer/load_tokenizer.h"
#include "tokenizer/pair_encoding.h"
#include "tokenizer/tokenizer.h"
#include "util/error.h"

namespace kiln {
namespace {

using Ids = std::vector<int32_t>;
namespace fs = std::filesystem;

// Byte-level BPE: "Ġ" is the space stand-in. Ids: h0 e1 l2 o3 Ġ4 he5 ll6 hell7 hello8 Ġhello9,
// <s>10 </s>11 <|im_end|>12.
const char* kByteLevel = R"({
  "added_tokens": [
    {"id": 10, "content": "<s>", "special": true, "normalized": false},
    {"id": 11, "content": "</s>", "special": true, "normalized": false},
    {"id": 12, "content": "<|im_end|>", "special": true, "normalized": false}],
  "normalizer": null,
  "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": false, "use_regex": true},
  "post_processor": {"type": "TemplateProcessing",
    "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}],
    "special_tokens": {"<s>": {"id": "<s>", "ids": [10], "tokens": ["<s>"]}}},
  "decoder": {"type": "ByteLevel"},
  "model": {"type": "BPE", "vocab": {"h": 0, "e": 1, "l": 2, "o": 3, "Ġ": 4, "he": 5, "ll": 6,
    "hell": 7, "hello": 8, "Ġhello": 9, "<s>": 10, "</s>": 11},
    "merges": ["h e", "l l", "he ll", "hell o", "Ġ hello"]}
})";

// SentencePiece-style: Metaspace "first" and <0xXX> byte fallback.
const char* kMetaspace = R"({
  "added_tokens": [{"id": 0, "content": "<unk>", "special": true, "normalized": false}],
  "pre_tokenizer": {"type": "Metaspace", "replacement": "▁", "prepend_scheme": "first", "split": false},
  "decoder": {"type": "Sequence", "decoders": [{"type": "Replace", "pattern": {"String": "▁"}, "content": " "},
    {"type": "ByteFallback"}, {"type": "Fuse"}, {"type": "Strip", "content": " ", "start": 1, "stop": 0}]},
  "model": {"type": "BPE", "unk_token": "<unk>", "byte_fallback": true, "fuse_unk": true,
    "vocab": {"<unk>": 0, "▁": 1, "h": 2, "i": 3, "hi": 4, "▁hi": 5, "<0xC3>": 6, "<0xA9>": 7},
    "merges": ["h i", "▁ hi"]}
})";

fs::path WriteDir(const std::string& name, const std::string& json, const std::string& config) {
  fs::path dir = fs::temp_directory_path() / ("kiln_hf_test_" + name);
  fs::create_directories(dir);
  std::ofstream(dir / "tokenizer.json") << json;
  if (!config.empty()) std::ofstream(dir / "tokenizer_config.json") << config;
  return dir;
}

TEST(HfTokenizerTest, ByteLevelEncodeDecode) {
  auto tok = Tokenizer::FromHfJson(kByteLevel, "", "t.json");
  EXPECT_EQ(tok->Encode("hello hello", false), (Ids{8, 9}));
  EXPECT_EQ(tok->Encode("hello", true), (Ids{10, 8}));
  EXPECT_EQ(tok->Encode("<s>hello<|im_end|>", false, true), (Ids{10, 8, 12}));
  EXPECT_EQ(tok->Decode(Ids{10, 8, 9, 12}, true), "hello hello");
  EXPECT_EQ(tok->Decode(Ids{10, 8, 12}, false), "<s>hello<|im_end|>");
  EXPECT_EQ(tok->bos_id(), 10);
  EXPECT_EQ(tok->eos_id(), 11);
  EXPECT_TRUE(tok->AddsBos());
  EXPECT_FALSE(tok->AddsEos());
  EXPECT_TRUE(tok->IsControl(12));
  EXPECT_FALSE(tok->IsControl(8));
  EXPECT_TRUE(tok->IsSpecial(12));
  EXPECT_FALSE(tok->IsSpecial(8));
  EXPECT_EQ(tok->StopIds(), (Ids{11, 12}));
  EXPECT_EQ(tok->TokenPiece(9), " hello");
  EXPECT_EQ(tok->TokenPiece(12), "");
  EXPECT_EQ(tok->TokenText(9), "Ġhello");
  EXPECT_EQ(tok->vocab_size(), 13);
  EXPECT_THROW(tok->Decode(Ids{13}, true), Error);
}

TEST(HfTokenizerTest, InvalidUtf8InputIsReplaced) {
  auto tok = Tokenizer::FromHfJson(kByteLevel, "", "t.json");
  // U+FFFD has no token here: dropped, like any character the model cannot spell.
  EXPECT_EQ(tok->Encode("he\xff", false), (Ids{5}));
}

TEST(HfTokenizerTest, MetaspacePiecesKeepTheirSpaceAndRawBytes) {
  auto tok = Tokenizer::FromHfJson(kMetaspace, "", "t.json");
  EXPECT_EQ(tok->Encode("hi hi", false), (Ids{5, 5}));
  EXPECT_EQ(tok->Encode("é", false), (Ids{1, 6, 7}));
  EXPECT_EQ(tok->Decode(Ids{5, 5}, true), "hi hi");  // Strip drops the first space only
  EXPECT_EQ(tok->TokenPiece(5), " hi");              // a stream piece keeps it
  EXPECT_EQ(tok->TokenPiece(6), "\xC3");             // half a character, raw
  EXPECT_EQ(tok->Decode(Ids{6}, true), "\xEF\xBF\xBD");
}

TEST(HfTokenizerTest, LoadTokenizerReadsTheConfig) {
  const fs::path dir = WriteDir("config", kByteLevel, R"({
    "bos_token": {"content": "<s>", "lstrip": false}, "eos_token": "<|im_end|>",
    "add_bos_token": false, "add_eos_token": true, "clean_up_tokenization_spaces": true,
    "chat_template": [{"name": "tool_use", "template": "T"}, {"name": "default", "template": "D"}]})");
  EXPECT_TRUE(HasHfTokenizer(dir.string()));
  for (const fs::path& p : {dir, dir / "tokenizer.json"}) {
    auto tok = LoadTokenizer(p.string());
    EXPECT_EQ(tok->eos_id(), 12);
    EXPECT_FALSE(tok->AddsBos());
    EXPECT_TRUE(tok->AddsEos());
    EXPECT_EQ(tok->Encode("hello", true), (Ids{8, 12}));
    EXPECT_EQ(tok->ChatTemplateSource(), "D");
  }
  fs::remove_all(dir);
}

TEST(HfTokenizerTest, LoadTokenizerErrors) {
  const fs::path empty = fs::temp_directory_path() / "kiln_hf_test_empty";
  fs::create_directories(empty);
  EXPECT_FALSE(HasHfTokenizer(empty.string()));
  EXPECT_THROW(LoadTokenizer(empty.string()), Error);
  EXPECT_THROW(LoadTokenizer((empty / "missing.json").string()), Error);
  fs::remove_all(empty);
}

// WordPiece with [CLS]=2 [SEP]=3, words a=4 b=5 c=6, and the post-processor given.
std::string BertWith(const std::string& post_processor) {
  return R"({"added_tokens": [
    {"id": 0, "content": "[UNK]", "special": true, "normalized": false},
    {"id": 2, "content": "[CLS]", "special": true, "normalized": false},
    {"id": 3, "content": "[SEP]", "special": true, "normalized": false}],
  "normalizer": {"type": "BertNormalizer", "lowercase": true},
  "pre_tokenizer": {"type": "BertPreTokenizer"},
  "post_processor": )" +
         post_processor + R"(,
  "model": {"type": "WordPiece", "unk_token": "[UNK]",
    "vocab": {"[UNK]": 0, "[PAD]": 1, "[CLS]": 2, "[SEP]": 3, "a": 4, "b": 5, "c": 6}}})";
}

std::vector<LayoutToken> Tokens(std::initializer_list<LayoutToken> run) { return run; }

TEST(HfLayoutTest, BertProcessing) {
  auto tok = Tokenizer::FromHfJson(
      BertWith(R"({"type": "BertProcessing", "sep": ["[SEP]", 3], "cls": ["[CLS]", 2]})"), "",
      "t.json");
  const SpecialLayout l = tok->Layout();
  EXPECT_EQ(l.single_before, Tokens({{2, 0}}));
  EXPECT_EQ(l.single_after, Tokens({{3, 0}}));
  EXPECT_EQ(l.pair_middle, Tokens({{3, 0}}));
  EXPECT_EQ(l.pair_after, Tokens({{3, 1}}));
  EXPECT_EQ(NumSpecialTokens(l, false), 2u);
  EXPECT_EQ(NumSpecialTokens(l, true), 3u);
  const EncodedInput pair = AssemblePair(l, tok->Encode("a b", false), tok->Encode("c", false));
  EXPECT_EQ(pair.ids, (Ids{2, 4, 5, 3, 6, 3}));
  EXPECT_EQ(pair.type_ids, (Ids{0, 0, 0, 0, 1, 1}));
  const EncodedInput single = AssembleSingle(l, tok->Encode("a", false));
  EXPECT_EQ(single.ids, tok->Encode("a", true));
  EXPECT_EQ(single.type_ids, (Ids{0, 0, 0}));
}

TEST(HfLayoutTest, RobertaProcessingTypesAreAllZero) {
  auto tok = Tokenizer::FromHfJson(
      BertWith(R"({"type": "RobertaProcessing", "sep": ["[SEP]", 3], "cls": ["[CLS]", 2]})"), "",
      "t.json");
  const EncodedInput pair =
      AssemblePair(tok->Layout(), tok->Encode("a", false), tok->Encode("b c", false));
  EXPECT_EQ(pair.ids, (Ids{2, 4, 3, 3, 5, 6, 3}));
  EXPECT_EQ(pair.type_ids, (Ids{0, 0, 0, 0, 0, 0, 0}));
  EXPECT_EQ(NumSpecialTokens(tok->Layout(), true), 4u);
}

TEST(HfLayoutTest, TemplatePiecesCarryTheirOwnTypeIds) {
  // The middle [SEP] has B's type id, the leading [CLS] one of its own.
  auto tok = Tokenizer::FromHfJson(BertWith(R"({"type": "TemplateProcessing",
      "single": [{"SpecialToken": {"id": "[CLS]", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
                 {"SpecialToken": {"id": "[SEP]", "type_id": 0}}],
      "pair": [{"SpecialToken": {"id": "[CLS]", "type_id": 2}}, {"Sequence": {"id": "A", "type_id": 0}},
               {"SpecialToken": {"id": "[SEP]", "type_id": 1}}, {"Sequence": {"id": "B", "type_id": 1}},
               {"SpecialToken": {"id": "[SEP]", "type_id": 1}}, {"SpecialToken": {"id": "[CLS]", "type_id": 1}}],
      "special_tokens": {"[CLS]": {"id": "[CLS]", "ids": [2], "tokens": ["[CLS]"]},
                         "[SEP]": {"id": "[SEP]", "ids": [3], "tokens": ["[SEP]"]}}})"),
                                   "", "t.json");
  const SpecialLayout l = tok->Layout();
  EXPECT_EQ(l.pair_before, Tokens({{2, 2}}));
  EXPECT_EQ(l.pair_middle, Tokens({{3, 1}}));
  EXPECT_EQ(l.pair_after, Tokens({{3, 1}, {2, 1}}));
  EXPECT_EQ(l.type_a, 0);
  EXPECT_EQ(l.type_b, 1);
  const EncodedInput pair = AssemblePair(l, Ids{4}, Ids{5, 6});
  EXPECT_EQ(pair.ids, (Ids{2, 4, 3, 5, 6, 3, 2}));
  EXPECT_EQ(pair.type_ids, (Ids{2, 0, 1, 1, 1, 1, 1}));
  EXPECT_EQ(AssemblePair(l, Ids{}, Ids{}).ids, (Ids{2, 3, 3, 2}));
}

TEST(HfLayoutTest, TemplateWithoutAUsablePairWrapsBothInTheSingle) {
  // kByteLevel's template has no "pair"; a pair template with B before A is not used either.
  auto tok = Tokenizer::FromHfJson(kByteLevel, "", "t.json");
  const SpecialLayout l = tok->Layout();
  EXPECT_EQ(l.single_before, Tokens({{10, 0}}));
  EXPECT_EQ(l.pair_before, Tokens({{10, 0}}));
  EXPECT_TRUE(l.pair_middle.empty() && l.pair_after.empty());
  EXPECT_EQ(l.type_b, 0);
  auto swapped = Tokenizer::FromHfJson(BertWith(R"({"type": "TemplateProcessing",
      "single": [{"Sequence": {"id": "A", "type_id": 0}}, {"SpecialToken": {"id": "[SEP]", "type_id": 0}}],
      "pair": [{"Sequence": {"id": "B", "type_id": 1}}, {"Sequence": {"id": "A", "type_id": 0}}],
      "special_tokens": {"[SEP]": {"id": "[SEP]", "ids": [3], "tokens": ["[SEP]"]}}})"),
                                       "", "t.json");
  EXPECT_EQ(AssemblePair(swapped->Layout(), Ids{4}, Ids{5}).ids, (Ids{4, 5, 3}));
}

TEST(HfLayoutTest, SequenceNullAndByteLevel) {
  // ByteLevel keeps the ids and the type ids: the template inside the Sequence decides.
  auto seq = Tokenizer::FromHfJson(BertWith(R"({"type": "Sequence", "processors": [
      {"type": "ByteLevel", "trim_offsets": false},
      {"type": "BertProcessing", "sep": ["[SEP]", 3], "cls": ["[CLS]", 2]}]})"),
                                   "", "t.json");
  EXPECT_EQ(AssemblePair(seq->Layout(), Ids{4}, Ids{5}).type_ids, (Ids{0, 0, 0, 1, 1}));
  EXPECT_EQ(seq->Encode("a", true), (Ids{2, 4, 3}));
  // No post-processor, or ByteLevel alone: no specials, B keeps the type id 1 HF gives it.
  for (const char* post : {"null", R"({"type": "ByteLevel"})"}) {
    auto tok = Tokenizer::FromHfJson(BertWith(post), "", "t.json");
    const EncodedInput pair = AssemblePair(tok->Layout(), Ids{4}, Ids{5, 6});
    EXPECT_EQ(pair.ids, (Ids{4, 5, 6})) << post;
    EXPECT_EQ(pair.type_ids, (Ids{0, 1, 1})) << post;
    EXPECT_EQ(NumSpecialTokens(tok->Layout(), true), 0u) << post;
  }
}

TEST(HfLayoutTest, LlamaConfigTemplate) {
  // transformers' LlamaTokenizerFast: "<s>:0 $A:0 </s>:0 <s>:1 $B:1 </s>:1".
  auto tok = Tokenizer::FromHfJson(
      kByteLevel, R"({"tokenizer_class": "LlamaTokenizerFast", "add_eos_token": true})", "t.json");
  const EncodedInput pair = AssemblePair(tok->Layout(), Ids{8}, Ids{9});
  EXPECT_EQ(pair.ids, (Ids{10, 8, 11, 10, 9, 11}));
  EXPECT_EQ(pair.type_ids, (Ids{0, 0, 0, 1, 1, 1}));
  EXPECT_EQ(tok->Encode("hello", true), (Ids{10, 8, 11}));
}

TEST(HfTokenizerTest, ConcurrentEncode) {
  auto tok = Tokenizer::FromHfJson(kByteLevel, "", "t.json");
  std::vector<std::thread> threads;
  std::vector<bool> ok(4, false);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      bool all = true;
      for (int i = 0; i < 200; ++i) all = all && tok->Encode("hello hello", false) == Ids{8, 9};
      ok[t] = all;
    });
  }
  for (auto& th : threads) th.join();
  for (bool b : ok) EXPECT_TRUE(b);
}

}  // namespace
}  // namespace kiln
