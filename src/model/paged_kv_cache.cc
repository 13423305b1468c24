#include "model/paged_kv_cache.h"

#include "util/error.h"

namespace kiln {

PagedKvCache::PagedKvCache(const ModelConfig& config, int64_t num_blocks, int64_t block_size)
    : num_blocks_(num_blocks),
      block_size_(block_size),
      kv_dim_(config.num_kv_heads * config.head_dim),
      layer_stride_(num_blocks * block_size * kv_dim_) {
  KILN_CHECK(num_blocks > 0 && block_size > 0, "KV cache needs at least one block of one token");
  k_.assign(static_cast<size_t>(layer_stride_ * config.num_layers), 0.0f);
  v_.assign(static_cast<size_t>(layer_stride_ * config.num_layers), 0.0f);
}

int64_t PagedKvCache::BytesPerToken(const ModelConfig& c) {
  return 2 * c.num_layers * c.num_kv_heads * c.head_dim * static_cast<int64_t>(sizeof(float));
}

int64_t PagedKvCache::Offset(int64_t layer, const int32_t* block_table, int64_t pos) const {
  const int64_t block = block_table[pos / block_size_];
  return layer * layer_stride_ + (block * block_size_ + pos % block_size_) * kv_dim_;
}

float* PagedKvCache::KRow(int64_t layer, const int32_t* table, int64_t pos) {
  return k_.data() + Offset(layer, table, pos);
}

float* PagedKvCache::VRow(int64_t layer, const int32_t* table, int64_t pos) {
  return v_.data() + Offset(layer, table, pos);
}

kernels::PagedKv PagedKvCache::View(int64_t layer, const int32_t* block_table) const {
  kernels::PagedKv kv;
  kv.k_base = k_.data() + layer * layer_stride_;
  kv.v_base = v_.data() + layer * layer_stride_;
  kv.block_stride = block_size_ * kv_dim_;
  kv.block_size = block_size_;
  kv.block_table = block_table;
  return kv;
}

}  // namespace kiln
