// What the engine needs from a model: a forward pass over a ragged batch whose KV lives in a
// pool of fixed-size blocks addressed by the block tables the engine's KV manager hands out.
// The real implementation wraps kiln::Model; tests use a fake.
#pragma once

#include <cstdint>
#include <vector>

#include "model/batch.h"

namespace kiln {

class ModelRunner {
 public:
  virtual ~ModelRunner() = default;
  virtual int64_t vocab_size() const = 0;
  virtual int64_t block_size() const = 0;   // tokens per KV block
  virtual int64_t num_blocks() const = 0;   // KV blocks in the pool
  virtual int64_t max_context() const = 0;  // max positions per sequence
  // logits: [sum of num_logits over the seqs with want_logits, vocab], in batch order.
  virtual void Forward(const Batch& batch, float* logits) = 0;
  // The compute pool's cores and each one's worker CPU seconds so far (/v1/status, kiln top);
  // empty for runners without a pool. Thread-safe.
  virtual std::vector<int> cores() const { return {}; }
  virtual std::vector<double> CoreCpuSeconds() const { return {}; }
};

}  // namespace kiln
