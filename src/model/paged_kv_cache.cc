#include "model/paged_kv_cache.h"

#include "kernels/ops.h"
#include "util/error.h"

namespace kiln {

std::optional<DType> ParseKvCacheDType(std::string_view name) {
  if (name == "f32") return DType::kF32;
  if (name == "f16") return DType::kF16;
  if (name == "bf16") return DType::kBF16;
  return std::nullopt;
}

DType AutoKvCacheDType(DType weights) {
  return weights == DType::kF32 || weights == DType::kBF16 ? weights : DType::kF16;
}

std::optional<DType> ResolveKvCacheDType(std::string_view name, DType weights) {
  if (name == "auto") return AutoKvCacheDType(weights);
  return ParseKvCacheDType(name);
}

namespace {

bool IsKvDType(DType t) { return t == DType::kF32 || t == DType::kF16 || t == DType::kBF16; }
int64_t KvElemBytes(DType t) { return GetDTypeInfo(t).block_bytes; }

}  // namespace

PagedKvCache::PagedKvCache(const ModelConfig& config, int64_t num_blocks, int64_t block_size,
                           DType dtype)
    : num_blocks_(num_blocks),
      block_size_(block_size),
      head_dim_(config.head_dim),
      kv_dim_(config.num_kv_heads * config.head_dim),
      layer_stride_(num_blocks * block_size * kv_dim_),
      dtype_(dtype),
      elem_bytes_(KvElemBytes(dtype)) {
  KILN_CHECK(num_blocks > 0 && block_size > 0, "KV cache needs at least one block of one token");
  KILN_CHECK(IsKvDType(dtype), "KV cache dtype must be f32, f16 or bf16");
  const size_t bytes = static_cast<size_t>(layer_stride_ * config.num_layers * elem_bytes_);
  // Zero-filled, so a row never written reads as 0 in every dtype: fresh anonymous pages that
  // the kernel zeroes when first touched (value-initializing 2 GiB took 1.1 s of a 1B model's
  // 1.4 s start). 4 KiB pages: the first steps touch a few rows of every layer, and faulting
  // in a 2 MiB page for each cost the first request 0.2 s.
  k_ = HugeBuffer(bytes, /*huge_pages=*/false);
  v_ = HugeBuffer(bytes, /*huge_pages=*/false);
}

int64_t PagedKvCache::BytesPerToken(const ModelConfig& c, DType dtype) {
  return 2 * c.num_layers * c.num_kv_heads * c.head_dim * KvElemBytes(dtype);
}

void PagedKvCache::Write(int64_t layer, const int32_t* table, int64_t pos, const float* k,
                         const float* v) {
  // Each kv head's head_dim values where attention reads them (the view's layout).
  const kernels::PagedKv view = View(layer, table);
  const int n_kv_heads = static_cast<int>(kv_dim_ / head_dim_);
  const kernels::AttentionShape shape{.n_kv_heads = n_kv_heads,
                                      .head_dim = static_cast<int>(head_dim_)};
  const int64_t layer_at = layer * layer_stride_;
  for (int h = 0; h < n_kv_heads; ++h) {
    const int64_t dst = layer_at + kernels::KvRowOffset(view, table, shape, pos, h);
    WriteRow(k + h * head_dim_, K() + dst * elem_bytes_);
    WriteRow(v + h * head_dim_, V() + dst * elem_bytes_);
  }
}

void PagedKvCache::WriteRow(const float* x, std::byte* dst) const {
  kernels::QuantizeRow(dtype_, x, head_dim_, reinterpret_cast<uint8_t*>(dst));
}

kernels::PagedKv PagedKvCache::View(int64_t layer, const int32_t* block_table) const {
  kernels::PagedKv kv;
  kv.k_base = K() + layer * layer_stride_ * elem_bytes_;
  kv.v_base = V() + layer * layer_stride_ * elem_bytes_;
  kv.block_stride = block_size_ * kv_dim_;
  kv.block_size = block_size_;
  kv.block_table = block_table;
  kv.dtype = dtype_;
  kv.layout = kernels::KvLayout::kHeadMajor;
  return kv;
}

}  // namespace kiln
