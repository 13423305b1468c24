// `kiln generate --batch FILE`: JSONL requests, one per line:
//   {"prompt": "..." | "prompt_ids": [1, 2, ...], "arrival_step": N, <GenerateParams fields>}
// Fields not given take the command line's values. arrival_step delays the submission until
// the engine has run N steps, so that a request joins a batch in flight (see engine_run.h).
#pragma once

#include <string>
#include <vector>

#include "cli/engine_run.h"
#include "cli/generate_params.h"

namespace kiln {

class Tokenizer;

struct BatchEntry {
  PendingRequest pending;
  bool details = false;
};

// Throws kiln::Error naming the line on malformed input. `tokenizer` may be null (then every
// line needs prompt_ids).
std::vector<BatchEntry> ReadBatchFile(const std::string& path, const GenerateParams& defaults,
                                      const Tokenizer* tokenizer,
                                      const std::vector<int64_t>& eos_ids);

}  // namespace kiln
