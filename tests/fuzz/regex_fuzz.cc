// libFuzzer target for the constraint regex compiler (grammar/regex_compiler.h), which takes
// patterns from clients (`grammar` of type regex, JSON-schema `pattern`).
// What must hold: no crash and bounded work: a pattern either compiles within the state limit
// or is refused with kiln::Error; a compiled one walks any bytes (the input itself) through its
// lazy DFA without a crash, and the DFA stays under its own limit or refuses with kiln::Error.
//
// Run: KILN_FUZZ_TARGETS=regex scripts/fuzz.sh
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "grammar/lazy_dfa.h"
#include "grammar/regex_compiler.h"
#include "util/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view pattern(reinterpret_cast<const char*>(data), size);
  kiln::grammar::ByteNfa nfa(20000);
  kiln::grammar::Fragment f;
  try {
    f = kiln::grammar::CompileRegex(pattern, nfa);
  } catch (const kiln::Error&) {
    return 0;
  }
  nfa.set_start(f.start);
  nfa.set_accept(f.end);
  kiln::grammar::LazyDfa dfa(std::move(nfa), 2000);
  try {
    int32_t s = dfa.start();
    for (char c : pattern) {
      s = dfa.Step(s, static_cast<uint8_t>(c));
      if (s == kiln::grammar::LazyDfa::kDead) break;
    }
    if (s != kiln::grammar::LazyDfa::kDead) (void)dfa.IsAccepting(s);
  } catch (const kiln::Error&) {
  }
  return 0;
}
