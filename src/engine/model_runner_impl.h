// The real ModelRunner: kiln::Model over a preallocated paged KV pool and a pinned compute pool.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "engine/model_runner.h"
#include "util/dtype.h"

namespace kiln {

class Model;

struct ModelRunnerOptions {
  int64_t block_size = 16;  // tokens per KV block
  // KV pool size in tokens (TGI's --max-batch-total-tokens); 0 = derive from kv_memory_bytes.
  int64_t max_batch_total_tokens = 0;
  int64_t kv_memory_bytes = int64_t{2} << 30;  // used when max_batch_total_tokens == 0
  // KV element type: kF32 (exact), kF16 or kBF16 (twice the tokens in the same
  // kv_memory_bytes). The CLI's "auto" is resolved before (AutoKvCacheDType).
  DType kv_cache_dtype = DType::kF32;
  std::vector<int> cores;  // compute cores; empty = all allowed
  bool pin_threads = true;
};

// `model` must outlive the runner.
std::unique_ptr<ModelRunner> MakeModelRunner(Model& model, const ModelRunnerOptions& options);

// A speculative draft model beside `target` (a MakeModelRunner runner): its own KV pool with the
// target's block size and count, so the target's block tables address the draft's rows too,
// and the target's compute pool (the two never run at once: no second set of spinning workers).
// `draft` must outlive the runner, and the runner must not outlive `target`.
std::unique_ptr<ModelRunner> MakeDraftRunner(Model& draft, const ModelRunner& target,
                                             DType kv_cache_dtype);

}  // namespace kiln
