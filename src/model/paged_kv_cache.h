// The KV pool: per layer, K and V of [num_blocks, KV, block_size, hd] in f32, f16 or bf16 (head
// major: attention reads one kv head's positions of a block as one run, kernels::KvLayout).
// Sequences own blocks through block tables (the engine's KV manager hands out the ids); the model
// only reads and writes rows. One preallocated allocation, no growth at run time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string_view>

#include "kernels/paged_attention.h"
#include "model/config.h"
#include "util/dtype.h"
#include "util/huge_buffer.h"

namespace kiln {

// "f32" / "f16" / "bf16" -> kF32 / kF16 / kBF16; nullopt for anything else (the CLI reports it).
std::optional<DType> ParseKvCacheDType(std::string_view name);

// The KV element type of "auto" (the CLI's default) for a model whose attention weights are
// `weights`: f32 and bf16 weights keep their type (vLLM's "auto", the model's dtype); f16 and
// quantized weights get f16 (llama.cpp's cache type, with which these GGUF files are made).
DType AutoKvCacheDType(DType weights);

// --kv-cache-dtype: "auto" -> AutoKvCacheDType(weights), else ParseKvCacheDType(name).
std::optional<DType> ResolveKvCacheDType(std::string_view name, DType weights);

class PagedKvCache {
 public:
  // dtype: DType::kF32 (exact, the default), DType::kF16 (half the memory, 11-bit mantissa,
  // llama.cpp's default; values past 65504 become inf) or DType::kBF16 (half the memory, f32's
  // range, 8-bit mantissa). f16 / bf16 rows are rounded to nearest even when written, and
  // attention widens them back to f32 exactly.
  PagedKvCache(const ModelConfig& config, int64_t num_blocks, int64_t block_size,
               DType dtype = DType::kF32);

  int64_t num_blocks() const { return num_blocks_; }
  int64_t block_size() const { return block_size_; }
  int64_t kv_dim() const { return kv_dim_; }
  DType dtype() const { return dtype_; }
  // Bytes per token of context across all layers (K and V), for sizing from a memory budget.
  static int64_t BytesPerToken(const ModelConfig& config, DType dtype = DType::kF32);

  // Stores k [kv_dim] and v [kv_dim] as the row of position `pos` of the sequence with
  // `block_table`, in layer `layer`, converting to the pool's dtype.
  void Write(int64_t layer, const int32_t* block_table, int64_t pos, const float* k,
             const float* v);
  kernels::PagedKv View(int64_t layer, const int32_t* block_table) const;

 private:
  // x [head_dim] to dst in the pool's dtype.
  void WriteRow(const float* x, std::byte* dst) const;

  int64_t num_blocks_, block_size_, head_dim_, kv_dim_, layer_stride_;
  DType dtype_;
  int64_t elem_bytes_;
  std::byte* K() const { return reinterpret_cast<std::byte*>(k_.data()); }
  std::byte* V() const { return reinterpret_cast<std::byte*>(v_.data()); }

  HugeBuffer k_, v_;  // [layers, num_blocks, KV, block_size, hd] of dtype_
};

}  // namespace kiln
