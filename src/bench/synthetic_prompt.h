// Prompts of an exact token count under a PromptTokenizer.
#pragma once

#include <cstdint>
#include <string>

#include "bench/prompt_tokenizer.h"

namespace kiln::bench {

struct SyntheticPrompt {
  std::string text;
  int64_t tokens = 0;  // CountPromptTokens(text): the target unless the tokenizer prevented it
};

// A prompt whose CountPromptTokens is `tokens` (special tokens such as BOS included), built from
// GenerateWords(seed): encode filler text, keep the first ids, decode, and correct the cut until
// re-encoding gives the exact count. Different seeds give prompts without a shared prefix.
SyntheticPrompt MakeSyntheticPrompt(const PromptTokenizer& tokenizer, int64_t tokens,
                                    uint64_t seed);

}  // namespace kiln::bench
