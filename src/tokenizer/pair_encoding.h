// Assembling encoder inputs from a tokenizer's SpecialLayout: the ids and token type ids of one
// sequence or a pair, exactly as HF's post-processor lays them out. The caller tokenizes each
// part with Encode(text, false) and truncates it first (reserving NumSpecialTokens), so the
// specials are never cut.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "tokenizer/tokenizer.h"

namespace kiln {

// Model inputs: input_ids and token_type_ids, the same length.
struct EncodedInput {
  std::vector<int32_t> ids;
  std::vector<int32_t> type_ids;
  bool operator==(const EncodedInput&) const = default;
};

// single_before + a + single_after.
EncodedInput AssembleSingle(const SpecialLayout& layout, std::span<const int32_t> a);
// pair_before + a + pair_middle + b + pair_after.
EncodedInput AssemblePair(const SpecialLayout& layout, std::span<const int32_t> a,
                          std::span<const int32_t> b);
// How many specials AssembleSingle (pair = false) or AssemblePair adds (HF's
// num_special_tokens_to_add).
size_t NumSpecialTokens(const SpecialLayout& layout, bool pair);

}  // namespace kiln
