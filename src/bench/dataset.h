// Where request contents come from: synthetic prompts of given token counts, or a file.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "bench/data_spec.h"
#include "bench/prompt_tokenizer.h"

namespace kiln::bench {

struct DataItem {
  std::string prompt;          // the text (for chat: the user message)
  std::string messages_json;   // a full chat "messages" array from a file; empty = use prompt
  int64_t prompt_tokens = -1;  // expected prompt tokens; -1 unknown
  int64_t output_tokens = -1;  // tokens to generate (max_tokens + ignore_eos); -1: server decides
};

class Dataset {
 public:
  virtual ~Dataset() = default;
  // Item `index` (0, 1, 2, ... across all benchmarks of a run). Deterministic for a seed.
  virtual const DataItem& Get(int64_t index) = 0;
  // Makes items [0, count) now, so that generating them costs nothing during a benchmark.
  virtual void Prepare(int64_t count) = 0;
  virtual std::string description() const = 0;
};

std::unique_ptr<Dataset> MakeSyntheticDataset(const SyntheticDataSpec& spec,
                                              std::shared_ptr<const PromptTokenizer> tokenizer);

// JSON Lines (one object per line), a JSON array of objects, or plain text (one prompt per
// line; .txt). Object fields: the prompt in "prompt", "text", "content", "input" or "question",
// or a chat "messages" array; the output length in "output_tokens", "output_tokens_count",
// "max_tokens", "max_new_tokens" or "completion_tokens"; optionally "prompt_tokens". Items cycle
// when the run needs more requests than the file has. Throws kiln::Error.
std::unique_ptr<Dataset> LoadFileDataset(const std::string& path, const PromptTokenizer* tokenizer);

}  // namespace kiln::bench
