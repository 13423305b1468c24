// The KV pool: per layer, K and V of [num_blocks, block_size, KV, hd] in f32. Sequences own
// blocks through block tables (the engine's KV manager hands out the ids); the model only reads
// and writes rows. One preallocated allocation, no growth at run time.
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/paged_attention.h"
#include "model/config.h"

namespace kiln {

class PagedKvCache {
 public:
  PagedKvCache(const ModelConfig& config, int64_t num_blocks, int64_t block_size);

  int64_t num_blocks() const { return num_blocks_; }
  int64_t block_size() const { return block_size_; }
  int64_t kv_dim() const { return kv_dim_; }
  // Bytes per token of context across all layers (K and V), for sizing from a memory budget.
  static int64_t BytesPerToken(const ModelConfig& config);

  // Row of position `pos` for the sequence with `block_table`, in layer `layer`.
  float* KRow(int64_t layer, const int32_t* block_table, int64_t pos);
  float* VRow(int64_t layer, const int32_t* block_table, int64_t pos);
  kernels::PagedKv View(int64_t layer, const int32_t* block_table) const;

 private:
  int64_t Offset(int64_t layer, const int32_t* block_table, int64_t pos) const;

  int64_t num_blocks_, block_size_, kv_dim_, layer_stride_;
  std::vector<float> k_, v_;  // [layers, num_blocks, block_size, kv_dim]
};

}  // namespace kiln
