// A compiled constraint over a small vocabulary: masks per state, end tokens only where the
// constraint is complete, and a greedy walk that always ends in a full match.
#include "grammar/compiled_grammar.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "grammar/regex_compiler.h"

namespace kiln::grammar {
namespace {

constexpr int32_t kEos = 0;

std::shared_ptr<const TokenVocabulary> Vocabulary() {
  // id 0: eos (special, empty piece); 6: a special token whose text would match.
  std::vector<std::string> pieces = {"", "{", "\"a\"", ":", "1", "}", "{", "12", " "};
  std::vector<bool> text = {false, true, true, true, true, true, false, true, true};
  return std::make_shared<TokenVocabulary>(pieces, text, std::vector<int32_t>{kEos});
}

CompiledGrammar Compile(std::string_view pattern) {
  ByteNfa nfa(10000);
  const Fragment f = CompileRegex(pattern, nfa);
  nfa.set_start(f.start);
  nfa.set_accept(f.end);
  return CompiledGrammar(std::move(nfa), Vocabulary(), 1000);
}

std::vector<int32_t> Allowed(std::span<const uint64_t> mask) {
  std::vector<int32_t> ids;
  for (int32_t id = 0; id < 9; ++id) {
    if ((mask[id >> 6] >> (id & 63)) & 1) ids.push_back(id);
  }
  return ids;
}

TEST(CompiledGrammar, MasksFollowTheConstraint) {
  CompiledGrammar g = Compile("\\{\"a\": ?[0-9]+\\}");
  int32_t s = g.start();
  EXPECT_EQ(Allowed(g.Mask(s)), (std::vector<int32_t>{1}));  // not the special "{" (6)
  s = g.Advance(s, 1);
  EXPECT_EQ(Allowed(g.Mask(s)), (std::vector<int32_t>{2}));
  s = g.Advance(g.Advance(s, 2), 3);
  EXPECT_EQ(Allowed(g.Mask(s)), (std::vector<int32_t>{4, 7, 8}));
  s = g.Advance(s, 7);
  EXPECT_EQ(Allowed(g.Mask(s)), (std::vector<int32_t>{4, 5, 7}));
  EXPECT_FALSE(g.IsAccepting(s));
  EXPECT_EQ(g.Advance(s, kEos), CompiledGrammar::kDead);  // eos before the end: refused
  s = g.Advance(s, 5);
  EXPECT_TRUE(g.IsAccepting(s));
  EXPECT_EQ(Allowed(g.Mask(s)), (std::vector<int32_t>{kEos}));  // complete: only eos
  EXPECT_EQ(g.Advance(s, kEos), s);
  EXPECT_EQ(g.Advance(s, 4), CompiledGrammar::kDead);
  EXPECT_EQ(g.Advance(s, 6), CompiledGrammar::kDead);   // special tokens never match text
  EXPECT_EQ(g.Advance(s, 99), CompiledGrammar::kDead);  // outside the vocabulary
}

TEST(CompiledGrammar, MasksAreComputedOncePerState) {
  CompiledGrammar g = Compile("[0-9]+");
  const std::span<const uint64_t> a = g.Mask(g.start());
  const std::span<const uint64_t> b = g.Mask(g.start());
  EXPECT_EQ(a.data(), b.data());
}

}  // namespace
}  // namespace kiln::grammar
