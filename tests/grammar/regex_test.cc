// Regex -> NFA -> lazy DFA: what matches (re.fullmatch semantics), what is refused, and the
// token masks the vocabulary walk computes against a token-by-token check.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "grammar/lazy_dfa.h"
#include "grammar/regex_compiler.h"
#include "grammar/token_vocabulary.h"
#include "util/error.h"

namespace kiln::grammar {
namespace {

LazyDfa Compile(std::string_view pattern, int64_t max_nfa = 200000) {
  ByteNfa nfa(max_nfa);
  const Fragment f = CompileRegex(pattern, nfa);
  nfa.set_start(f.start);
  nfa.set_accept(f.end);
  return LazyDfa(std::move(nfa), 100000);
}

int32_t Walk(LazyDfa& dfa, int32_t state, std::string_view text) {
  for (char c : text) {
    if (state == LazyDfa::kDead) break;
    state = dfa.Step(state, static_cast<uint8_t>(c));
  }
  return state;
}

bool FullMatch(std::string_view pattern, std::string_view text) {
  LazyDfa dfa = Compile(pattern);
  const int32_t s = Walk(dfa, dfa.start(), text);
  return s != LazyDfa::kDead && dfa.IsAccepting(s);
}

std::string Refusal(std::string_view pattern) {
  try {
    Compile(pattern, 5000);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(Regex, LiteralsClassesAndQuantifiers) {
  EXPECT_TRUE(FullMatch("abc", "abc"));
  EXPECT_FALSE(FullMatch("abc", "abcd"));
  EXPECT_FALSE(FullMatch("abc", "ab"));
  EXPECT_TRUE(FullMatch("a|bc|", ""));
  EXPECT_TRUE(FullMatch("(ab)+c?", "ababc"));
  EXPECT_FALSE(FullMatch("(ab)+c?", "c"));
  EXPECT_TRUE(FullMatch("[a-c_]*", "ab_ca"));
  EXPECT_FALSE(FullMatch("[a-c_]*", "abd"));
  EXPECT_TRUE(FullMatch("[^0-9]{2,3}", "xy"));
  EXPECT_FALSE(FullMatch("[^0-9]{2,3}", "x1"));
  EXPECT_FALSE(FullMatch("[^0-9]{2,3}", "wxyz"));
  EXPECT_TRUE(FullMatch("\\d{4}-\\d{2}", "2026-12"));
  EXPECT_TRUE(FullMatch("\\w+\\s\\W", "ab_9 !"));
  EXPECT_TRUE(FullMatch("x{3}", "xxx"));
  EXPECT_FALSE(FullMatch("x{3}", "xx"));
  EXPECT_TRUE(FullMatch("x{2,}", "xxxxx"));
  EXPECT_TRUE(FullMatch("a{,2}", "a{,2}"));  // not a count: literal braces, as in Python
  EXPECT_TRUE(FullMatch("^(?:a|b)(?P<n>c)(?<m>d)$", "acd"));
  EXPECT_TRUE(FullMatch("a+?b", "aab"));
  EXPECT_TRUE(FullMatch("\\.\\*\\[\\]\\\\", ".*[]\\"));
  EXPECT_TRUE(FullMatch("[]a]+", "]a]"));
  EXPECT_TRUE(FullMatch("[\\x00-\\x1F]\\u0041",
                        "\x01"
                        "A"));
}

TEST(Regex, Utf8) {
  EXPECT_TRUE(FullMatch(".", "\xE6\x97\xA5"));      // 日: one character, three bytes
  EXPECT_TRUE(FullMatch(".", "\xF0\x9F\x98\x80"));  // an emoji, four bytes
  EXPECT_FALSE(FullMatch(".", "\n"));
  EXPECT_FALSE(FullMatch(".", "\xC0\x80"));      // overlong encoding
  EXPECT_FALSE(FullMatch(".", "\xED\xA0\x80"));  // a surrogate
  EXPECT_TRUE(FullMatch("[é-ü]+", "éü"));
  EXPECT_FALSE(FullMatch("[é-ü]+", "e"));
  EXPECT_TRUE(FullMatch("[^\"\\\\]*", "caf\xC3\xA9 \xE6\x97\xA5"));
  EXPECT_FALSE(FullMatch("[^\"\\\\]*", "a\"b"));
  EXPECT_TRUE(FullMatch("日本", "日本"));
}

TEST(Regex, RefusedConstructsNameThemselves) {
  EXPECT_NE(Refusal("(a)\\1").find("backreferences"), std::string::npos);
  EXPECT_NE(Refusal("a(?=b)").find("lookahead"), std::string::npos);
  EXPECT_NE(Refusal("(?i)a").find("inline flags"), std::string::npos);
  EXPECT_NE(Refusal("\\bword").find("word boundaries"), std::string::npos);
  EXPECT_NE(Refusal("\\p{L}").find("property"), std::string::npos);
  EXPECT_NE(Refusal("*a").find("nothing to repeat"), std::string::npos);
  EXPECT_NE(Refusal("(a").find("missing `)`"), std::string::npos);
  EXPECT_NE(Refusal("a)").find("unbalanced"), std::string::npos);
  EXPECT_NE(Refusal("[a").find("missing `]`"), std::string::npos);
  EXPECT_NE(Refusal("[z-a]").find("out of order"), std::string::npos);
  EXPECT_NE(Refusal("a{3,2}").find("m < n"), std::string::npos);
  EXPECT_NE(Refusal("a{99999}").find("over 10000"), std::string::npos);
  EXPECT_NE(Refusal("a^b").find("`^`"), std::string::npos);
  EXPECT_NE(Refusal("a$b").find("`$`"), std::string::npos);
  EXPECT_NE(Refusal("\\").find("trailing"), std::string::npos);
  EXPECT_NE(Refusal("\xFF").find("UTF-8"), std::string::npos);
  EXPECT_NE(Refusal(std::string(300, '(') + std::string(300, ')')).find("nested"),
            std::string::npos);
  EXPECT_NE(Refusal("a{1}{1}{1}{1}{1}{1}{1}{1}{1}").find("quantifiers in a row"),
            std::string::npos);
  // A pattern whose automaton passes the state limit (5000 here).
  EXPECT_NE(Refusal("(a{1000}){1000}").find("too large"), std::string::npos);
}

TEST(Regex, DfaStateLimitIsAnError) {
  ByteNfa nfa(100000);
  const Fragment f = CompileRegex("[ab]*a[ab]{12}", nfa);  // 2^13 DFA states
  nfa.set_start(f.start);
  nfa.set_accept(f.end);
  LazyDfa dfa(std::move(nfa), 1000);
  std::mt19937 rng(1);
  EXPECT_THROW(
      {
        int32_t s = dfa.start();
        for (int i = 0; i < 100000; ++i) s = dfa.Step(s, "ab"[rng() & 1]);
      },
      Error);
}

// Every token the walk allows keeps the DFA alive, and every other text token does not.
TEST(TokenVocabulary, MaskEqualsTheTokenByTokenCheck) {
  std::mt19937 rng(7);
  std::vector<std::string> pieces;
  std::vector<bool> text;
  for (int i = 0; i < 3000; ++i) {
    std::string p;
    const int len = 1 + static_cast<int>(rng() % 6);
    for (int k = 0; k < len; ++k) p += "ab\"c1 "[rng() % 6];
    pieces.push_back(p);
    text.push_back(i % 97 != 0);  // a few "special" tokens, never allowed
  }
  pieces.push_back("");  // an empty piece: never allowed
  text.push_back(true);
  const TokenVocabulary vocab(pieces, text, {0});
  for (const char* pattern : {"\"(a|b)*\"", "[ab ]{0,5}c1", "(a\"|1c)+ ?", "a*"}) {
    LazyDfa dfa = Compile(pattern);
    // States along a walk the constraint allows, the start included.
    std::vector<int32_t> states = {dfa.start()};
    for (int32_t id = 0; id < 200; ++id) {
      const int32_t s = Walk(dfa, states.back(), pieces[id]);
      if (s != LazyDfa::kDead) states.push_back(s);
    }
    for (int32_t state : states) {
      std::vector<uint64_t> mask(vocab.mask_words(), 0);
      vocab.AllowedTokens(dfa, state, mask.data());
      for (int32_t id = 0; id < vocab.size(); ++id) {
        const bool allowed = (mask[id >> 6] >> (id & 63)) & 1;
        const bool expected = vocab.is_text(id) && Walk(dfa, state, pieces[id]) != LazyDfa::kDead;
        ASSERT_EQ(allowed, expected) << pattern << " token " << id << " '" << pieces[id] << "'";
      }
    }
  }
}

}  // namespace
}  // namespace kiln::grammar
