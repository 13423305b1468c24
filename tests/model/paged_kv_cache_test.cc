#include "model/paged_kv_cache.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "util/half.h"

namespace kiln {
namespace {

ModelConfig SmallConfig() {
  ModelConfig c;
  c.num_layers = 2;
  c.num_heads = 4;
  c.num_kv_heads = 2;
  c.head_dim = 3;  // kv_dim 6
  return c;
}

TEST(PagedKvCache, ParsesDTypeNames) {
  EXPECT_EQ(ParseKvCacheDType("f32"), DType::kF32);
  EXPECT_EQ(ParseKvCacheDType("bf16"), DType::kBF16);
  EXPECT_EQ(ParseKvCacheDType("f16"), DType::kF16);
  EXPECT_FALSE(ParseKvCacheDType("f8").has_value());
  EXPECT_FALSE(ParseKvCacheDType("F16").has_value());
}

// "auto" follows the attention weights: f32 / bf16 checkpoints keep their type, f16 and every
// quantized type get f16 (llama.cpp's cache); explicit names win over the weights.
TEST(PagedKvCache, AutoFollowsTheWeights) {
  EXPECT_EQ(AutoKvCacheDType(DType::kF32), DType::kF32);
  EXPECT_EQ(AutoKvCacheDType(DType::kBF16), DType::kBF16);
  for (DType w : {DType::kF16, DType::kQ8_0, DType::kQ4_0, DType::kQ4_1, DType::kQ4_K, DType::kQ5_K,
                  DType::kQ6_K, DType::kQ5_0, DType::kQ5_1}) {
    EXPECT_EQ(AutoKvCacheDType(w), DType::kF16) << GetDTypeInfo(w).name;
  }
  EXPECT_EQ(ResolveKvCacheDType("auto", DType::kQ4_1), DType::kF16);
  EXPECT_EQ(ResolveKvCacheDType("auto", DType::kBF16), DType::kBF16);
  EXPECT_EQ(ResolveKvCacheDType("f32", DType::kQ4_1), DType::kF32);
  EXPECT_EQ(ResolveKvCacheDType("bf16", DType::kF32), DType::kBF16);
  EXPECT_FALSE(ResolveKvCacheDType("Auto", DType::kF32).has_value());
  EXPECT_FALSE(ResolveKvCacheDType("", DType::kF32).has_value());
}

TEST(PagedKvCache, HalfTypesHalveBytesPerToken) {
  const ModelConfig c = SmallConfig();
  EXPECT_EQ(PagedKvCache::BytesPerToken(c), 2 * 2 * 6 * 4);
  EXPECT_EQ(PagedKvCache::BytesPerToken(c, DType::kBF16), 2 * 2 * 6 * 2);
  EXPECT_EQ(PagedKvCache::BytesPerToken(c, DType::kF16), 2 * 2 * 6 * 2);
}

// Rows land in block block_table[pos / block_size] of their layer, head major (each kv head's
// head_dim values at (h * block_size + pos % block_size) * head_dim in the block), rounded to
// bf16 / f16 (nearest even) in a bf16 / f16 pool and kept exact in an f32 pool.
TEST(PagedKvCache, WritesRowsWhereTheViewReadsThem) {
  const ModelConfig c = SmallConfig();
  const std::vector<int32_t> table = {2, 0};
  const float k[6] = {1.0f, -2.5f, 3.14159265f, 1e-3f, 65504.0f, -0.1f};
  float v[6];
  for (int i = 0; i < 6; ++i) v[i] = -k[i];
  for (DType dtype : {DType::kF32, DType::kBF16, DType::kF16}) {
    PagedKvCache kv(c, /*num_blocks=*/3, /*block_size=*/4, dtype);
    kv.Write(/*layer=*/1, table.data(), /*pos=*/5, k, v);  // table[1] = block 0, row 1
    const kernels::PagedKv view = kv.View(1, table.data());
    ASSERT_EQ(view.dtype, dtype);
    ASSERT_EQ(view.layout, kernels::KvLayout::kHeadMajor);
    ASSERT_EQ(view.block_stride, 4 * 6);
    for (int i = 0; i < 6; ++i) {
      // Element i is head i / 3, dim i % 3; block 0, row 1.
      const int64_t head = i / 3, at = 0 * view.block_stride + (head * 4 + 1) * 3 + i % 3;
      if (dtype == DType::kF32) {
        EXPECT_EQ(static_cast<const float*>(view.k_base)[at], k[i]);
        EXPECT_EQ(static_cast<const float*>(view.v_base)[at], v[i]);
      } else {
        const auto narrow = dtype == DType::kF16 ? F32ToF16 : F32ToBf16;
        EXPECT_EQ(static_cast<const uint16_t*>(view.k_base)[at], narrow(k[i]));
        EXPECT_EQ(static_cast<const uint16_t*>(view.v_base)[at], narrow(v[i]));
      }
    }
    // Layer 0 is untouched (zero-filled).
    const kernels::PagedKv layer0 = kv.View(0, table.data());
    const int64_t bytes = dtype == DType::kF32 ? 4 : 2;
    const auto* raw = static_cast<const uint8_t*>(layer0.k_base);
    for (int64_t i = 0; i < 3 * 4 * 6 * bytes; ++i) ASSERT_EQ(raw[i], 0) << i;
  }
}

}  // namespace
}  // namespace kiln
