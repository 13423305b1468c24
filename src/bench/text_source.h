// Deterministic filler text for synthetic prompts: common English words, lower case, separated by
// single spaces and without punctuation, so that one word is one token in most vocabularies (the
// word-count approximation then holds) and a seed always gives the same text.
#pragma once

#include <cstdint>
#include <string>

namespace kiln::bench {

// `words` words drawn from a fixed list with a generator seeded by `seed`.
std::string GenerateWords(uint64_t seed, int64_t words);

}  // namespace kiln::bench
