// A ragged batch for one forward pass: the new tokens of several sequences concatenated, so
// every matmul runs with M = total tokens in the step (decodes and prefill chunks mixed).
#pragma once

#include <cstdint>
#include <vector>

namespace kiln {

struct BatchSequence {
  int64_t token_begin = 0;  // this sequence's tokens are Batch::tokens[token_begin, +count)
  int64_t token_count = 0;
  int64_t start_pos = 0;  // position of its first new token; [0, start_pos) is already in KV
  // KV block ids covering positions [0, start_pos + token_count): position p lives in block
  // block_table[p / block_size] at row p % block_size.
  std::vector<int32_t> block_table;
  bool want_logits = true;  // produce logits for the last new token(s)
  // With want_logits: logits of the last num_logits new tokens, in position order (speculative
  // verification scores every drafted position in the same pass). 1 <= num_logits <= token_count.
  int32_t num_logits = 1;
};

struct Batch {
  std::vector<int32_t> tokens;
  std::vector<BatchSequence> seqs;
};

}  // namespace kiln
