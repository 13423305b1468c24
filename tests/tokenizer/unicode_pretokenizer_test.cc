// Unicode helpers and the pre-tokenizer (regex splitting as llama.cpp does it).
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "tokenizer/pretokenizer.h"
#include "tokenizer/unicode.h"
#include "util/error.h"

namespace kiln::tok {
namespace {

std::vector<std::string> Words(const PreTokenizer& pre, std::string_view text) {
  PreTokenized out;
  pre.Split(text, &out);
  std::vector<std::string> words;
  uint32_t begin = 0;
  for (uint32_t end : out.ends) {
    words.push_back(out.text.substr(begin, end - begin));
    begin = end;
  }
  EXPECT_EQ(begin, out.text.size());
  return words;
}

std::vector<std::string> WordsFor(std::string_view pre_name, std::string_view text) {
  const PreTypeInfo* info = FindPreType(pre_name);
  EXPECT_NE(info, nullptr) << pre_name;
  if (info == nullptr) return {};
  PreTokenizer pre(info->regexes);
  return Words(pre, text);
}

using V = std::vector<std::string>;

TEST(Unicode, LenientUtf8DecodingLikeLlamaCpp) {
  std::vector<uint32_t> cps;
  unicode::DecodeUtf8("a\xC3\xA9\xE6\x97\xA5\xF0\x9F\x98\x80", &cps);
  EXPECT_EQ(cps, (std::vector<uint32_t>{'a', 0xE9, 0x65E5, 0x1F600}));

  cps.clear();  // stray continuation, truncated sequences, invalid lead: one U+FFFD per byte
  unicode::DecodeUtf8("\x80x\xC3", &cps);
  EXPECT_EQ(cps, (std::vector<uint32_t>{0xFFFD, 'x', 0xFFFD}));
  cps.clear();
  unicode::DecodeUtf8("\xE6\x97y\xFF", &cps);
  EXPECT_EQ(cps, (std::vector<uint32_t>{0xFFFD, 0xFFFD, 'y', 0xFFFD}));
  cps.clear();  // surrogates and overlong forms decode as written
  unicode::DecodeUtf8("\xED\xA0\x80\xC0\x80", &cps);
  EXPECT_EQ(cps, (std::vector<uint32_t>{0xD800, 0}));
  cps.clear();  // beyond U+10FFFF
  unicode::DecodeUtf8("\xF7\xBF\xBF\xBF", &cps);
  EXPECT_EQ(cps, (std::vector<uint32_t>{0xFFFD}));
}

TEST(Unicode, Utf8RoundTrip) {
  for (uint32_t cp : {0x0u, 0x7Fu, 0x80u, 0x7FFu, 0x800u, 0xFFFFu, 0x10000u, 0x10FFFFu}) {
    std::string s;
    unicode::AppendUtf8(cp, &s);
    EXPECT_EQ(s.size(), unicode::Utf8Len(cp));
    std::vector<uint32_t> back;
    unicode::DecodeUtf8(s, &back);
    EXPECT_EQ(back, std::vector<uint32_t>{cp});
  }
}

TEST(Unicode, Flags) {
  using namespace unicode;
  EXPECT_EQ(Flags('a'), kLetter);
  EXPECT_EQ(Flags(0x65E5), kLetter);  // 日
  EXPECT_EQ(Flags('7'), kNumber);
  EXPECT_EQ(Flags(0xBD), kNumber);  // ½ (No)
  EXPECT_EQ(Flags(','), kPunctuation);
  EXPECT_EQ(Flags('$'), kSymbol);
  EXPECT_EQ(Flags(0x1F600), kSymbol);  // 😀
  EXPECT_EQ(Flags(0x301), kMark);
  EXPECT_EQ(Flags(' '), kSeparator | kWhitespace);
  EXPECT_EQ(Flags('\n'), kControl | kWhitespace);
  EXPECT_EQ(Flags(0x85), kControl | kWhitespace);
  EXPECT_EQ(Flags(0x3000), kSeparator | kWhitespace);
  EXPECT_EQ(Flags(0x1C), kControl);  // not White_Space
  EXPECT_EQ(Flags(0x200B), kControl);
  EXPECT_EQ(Flags(0xE000), kControl);  // private use
  EXPECT_EQ(Flags(0xD800), kControl);
  EXPECT_EQ(Flags(0x0378), kUndefined);
  EXPECT_EQ(Flags(0x2EBF0), kLetter);  // CJK Ext. I (Unicode 15.1)
  EXPECT_EQ(Flags(0x110000), kUndefined);
}

TEST(Unicode, Gpt2ByteMapping) {
  EXPECT_EQ(unicode::ByteToCodepoint('a'), uint32_t{'a'});
  EXPECT_EQ(unicode::ByteToCodepoint(' '), 0x120u);   // Ġ
  EXPECT_EQ(unicode::ByteToCodepoint('\n'), 0x10Au);  // Ċ
  EXPECT_EQ(unicode::ByteToCodepoint(0), 0x100u);     // Ā
  EXPECT_EQ(unicode::ByteToCodepoint(0xAD), 0x143u);
  EXPECT_EQ(unicode::ByteToUtf8(' '), "\xC4\xA0");
  for (int b = 0; b < 256; ++b) {
    EXPECT_EQ(unicode::CodepointToByte(unicode::ByteToCodepoint(static_cast<uint8_t>(b))), b);
  }
  EXPECT_EQ(unicode::CodepointToByte(0x2581), -1);
}

TEST(PreTokenizer, Gpt2Splitter) {
  PreTokenizer pre(FindPreType("gpt-2")->regexes);
  EXPECT_EQ(Words(pre, "Hello world, it's 2024!"),
            (V{"Hello", " world", ",", " it", "'s", " 2024", "!"}));
  EXPECT_EQ(Words(pre, "a  b   \n c"), (V{"a", " ", " b", "   \n", " c"}));
  EXPECT_EQ(Words(pre, "trailing  "), (V{"trailing", "  "}));
  EXPECT_EQ(Words(pre, "IT'S"), (V{"IT", "'", "S"}));  // contractions are lower-case only
  EXPECT_EQ(Words(pre, "café 日本"), (V{"café", " 日本"}));
  EXPECT_TRUE(Words(pre, "").empty());
}

TEST(PreTokenizer, Llama3Splitter) {
  PreTokenizer pre(FindPreType("llama-bpe")->regexes);
  EXPECT_EQ(Words(pre, "Hello world, IT'S 1234567!"),
            (V{"Hello", " world", ",", " IT", "'S", " ", "123", "456", "7", "!"}));
  EXPECT_EQ(Words(pre, "a \n\n b"), (V{"a", " \n\n", " b"}));
  EXPECT_EQ(Words(pre, "x...\n\ny"), (V{"x", "...\n\n", "y"}));
  EXPECT_EQ(Words(pre, "\tindent"), (V{"\tindent"}));
}

TEST(PreTokenizer, RegexListsPerName) {
  // smollm: single digits, then GPT-2.
  EXPECT_EQ(WordsFor("smollm", "abc 123"), (V{"abc", " ", "1", "2", "3"}));
  // qwen2: single digits, letters may take one leading non-letter.
  EXPECT_EQ(WordsFor("qwen2", "(abc) 12"), (V{"(abc", ")", " ", "1", "2"}));
  // default: punctuation runs first, then GPT-2, digit runs, then groups of three digits.
  EXPECT_EQ(WordsFor("default", "a+=b 12345"), (V{"a", "+=", "b", " ", "123", "45"}));
  // deepseek-coder: \r\n alone, letters with one leading space, single digits.
  EXPECT_EQ(WordsFor("deepseek-coder", "ab\ncd 12"), (V{"ab", "\n", "cd", " ", "1", "2"}));
  // Non-ASCII literal classes (code point mode).
  EXPECT_EQ(WordsFor("deepseek-llm", "中文abc"), (V{"中文", "abc"}));
  EXPECT_EQ(FindPreType("no-such-pre"), nullptr);
  EXPECT_TRUE(FindPreType("llama3")->ignore_merges);
  EXPECT_TRUE(FindPreType("llama3")->add_bos);
  EXPECT_FALSE(FindPreType("smollm")->clean_spaces);
  EXPECT_TRUE(FindPreType("gpt-2")->clean_spaces);
  EXPECT_TRUE(FindPreType("glm4")->no_bos);
}

TEST(PreTokenizer, EmptyMatchesDoNotLoop) {
  // superbpe's second regex matches empty strings only (before groups of three digits).
  EXPECT_EQ(WordsFor("superbpe", "x1234567"), (V{"x", "1", "234", "567"}));
}

TEST(PreTokenizer, InvalidUtf8BecomesReplacementCharacter) {
  PreTokenizer pre(FindPreType("gpt-2")->regexes);
  PreTokenized out;
  pre.Split("a\xFF b", &out);
  EXPECT_EQ(out.text, "a\xEF\xBF\xBD b");
}

TEST(PreTokenizer, BadRegexThrows) { EXPECT_THROW(PreTokenizer({"(unclosed"}), Error); }

// The hand-written splitters must agree with a regex engine running the same pattern (the
// PCRE2 path over llama.cpp's collapsed text), on random strings.
std::string RandomText(std::mt19937& rng) {
  static const std::vector<std::string> kPool = {
      "a",
      "b",
      "Z",
      "é",
      "日",
      "я",
      "1",
      "9",
      "½",
      "٣",
      " ",
      " ",
      "  ",
      "\t",
      "\n",
      "\r",
      "\v",
      "\xC2\xA0",
      "\xE3\x80\x80",
      "\xC2\x85",
      "'",
      "'s",
      "'T",
      "'ll",
      "'RE",
      "!",
      ".",
      ",",
      "-",
      "$",
      "+",
      "😀",
      "\xCC\x81",
      "\xE2\x80\x8B",
      "_",
      "\x1C",
      "(",
      "\xEF\xBF\xBD",
      "x'",
  };
  std::uniform_int_distribution<size_t> pick(0, kPool.size() - 1);
  std::uniform_int_distribution<int> len(0, 24);
  std::string s;
  for (int i = len(rng); i > 0; --i) s += kPool[pick(rng)];
  return s;
}

TEST(PreTokenizer, HandWrittenSplittersMatchRegexEngine) {
  const std::string gpt2 = FindPreType("gpt-2")->regexes[0];
  const std::string llama3 = FindPreType("llama3")->regexes[0];
  PreTokenizer gpt2_custom({gpt2});
  PreTokenizer gpt2_regex({gpt2 + "|\\s+"});  // not recognised: runs through PCRE2
  PreTokenizer llama3_custom({llama3});
  PreTokenizer llama3_regex({llama3 + "|\\s+"});
  std::mt19937 rng(1234);
  for (int i = 0; i < 3000; ++i) {
    const std::string text = RandomText(rng);
    ASSERT_EQ(Words(gpt2_custom, text), Words(gpt2_regex, text)) << "gpt2: " << text;
    ASSERT_EQ(Words(llama3_custom, text), Words(llama3_regex, text)) << "llama3: " << text;
  }
}

}  // namespace
}  // namespace kiln::tok
