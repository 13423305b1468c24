// The compiled-grammar cache: a key compiles once, the least recently used entry leaves first,
// and a failed compile stores nothing.
#include "grammar/grammar_cache.h"

#include <gtest/gtest.h>

#include "grammar/regex_compiler.h"
#include "util/error.h"

namespace kiln::grammar {
namespace {

std::shared_ptr<CompiledGrammar> Make(std::string_view pattern, int* compiles) {
  ++*compiles;
  ByteNfa nfa(10000);
  const Fragment f = CompileRegex(pattern, nfa);
  nfa.set_start(f.start);
  nfa.set_accept(f.end);
  auto vocab = std::make_shared<TokenVocabulary>(
      std::vector<std::string>{"a", "b"}, std::vector<bool>{true, true}, std::vector<int32_t>{});
  return std::make_shared<CompiledGrammar>(std::move(nfa), vocab, 100);
}

TEST(GrammarCache, CompilesOncePerKeyAndEvictsTheLeastRecent) {
  GrammarCache cache(2);
  int compiles = 0;
  auto a = cache.Get("regex:a+", [&] { return Make("a+", &compiles); });
  EXPECT_EQ(cache.Get("regex:a+", [&] { return Make("a+", &compiles); }), a);
  EXPECT_EQ(compiles, 1);
  cache.Get("regex:b+", [&] { return Make("b+", &compiles); });
  cache.Get("regex:a+", [&] { return Make("a+", &compiles); });  // a+ is now the most recent
  cache.Get("regex:ab", [&] { return Make("ab", &compiles); });  // b+ leaves
  EXPECT_EQ(cache.size(), 2u);
  EXPECT_EQ(compiles, 3);
  EXPECT_EQ(cache.Get("regex:a+", [&] { return Make("a+", &compiles); }), a);
  cache.Get("regex:b+", [&] { return Make("b+", &compiles); });
  EXPECT_EQ(compiles, 4);
  EXPECT_EQ(cache.hits(), 3);
  EXPECT_EQ(cache.misses(), 4);
}

TEST(GrammarCache, AFailedCompileStoresNothing) {
  GrammarCache cache(4);
  int compiles = 0;
  EXPECT_THROW(cache.Get("regex:(", [&] { return Make("(", &compiles); }), Error);
  EXPECT_EQ(cache.size(), 0u);
}

}  // namespace
}  // namespace kiln::grammar
