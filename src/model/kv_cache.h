// Contiguous f32 KV cache of one sequence: per layer K and V of [capacity, KV, hd].
// (The paged, shared pool arrives with the engine; this is the single-sequence form.)
#pragma once

#include <cstdint>
#include <vector>

#include "model/config.h"

namespace kiln {

class KvCache {
 public:
  KvCache(const ModelConfig& config, int64_t capacity_tokens);

  int64_t capacity() const { return capacity_; }
  // [capacity, KV, hd] for layer l.
  float* K(int64_t layer) { return k_.data() + layer * layer_stride_; }
  float* V(int64_t layer) { return v_.data() + layer * layer_stride_; }

 private:
  int64_t capacity_;
  int64_t layer_stride_;
  std::vector<float> k_, v_;
};

}  // namespace kiln
