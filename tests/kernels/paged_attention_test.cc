#include "kernels/paged_attention.h"

#include <gtest/gtest.h>
#include <hwy/targets.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "util/half.h"

namespace kiln::kernels {
namespace {

// Scattered blocks: a sequence's table points at non-contiguous, shuffled pool blocks.
struct PagedFixture {
  PagedFixture(int n_kv_heads, int head_dim, int64_t block_size, int64_t n_blocks, int seed)
      : kv_dim(n_kv_heads * head_dim), block_size(block_size) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> dist(0.0f, 1.0f);
    k.resize(n_blocks * block_size * kv_dim);
    v.resize(k.size());
    for (auto& x : k) x = dist(rng);
    for (auto& x : v) x = dist(rng);
    for (int32_t b = 0; b < n_blocks; ++b) table.push_back(b);
    std::shuffle(table.begin(), table.end(), rng);
  }
  PagedKv View() const {
    return PagedKv{k.data(), v.data(), block_size * kv_dim, block_size, table.data()};
  }
  // The same pool rounded to bf16 (as PagedKvCache stores it with --kv-cache-dtype bf16).
  PagedKv Bf16View() {
    k16.resize(k.size());
    v16.resize(v.size());
    std::transform(k.begin(), k.end(), k16.begin(), F32ToBf16);
    std::transform(v.begin(), v.end(), v16.begin(), F32ToBf16);
    return PagedKv{k16.data(), v16.data(),   block_size * kv_dim,
                   block_size, table.data(), DType::kBF16};
  }
  int64_t kv_dim, block_size;
  std::vector<float> k, v;
  std::vector<uint16_t> k16, v16;
  std::vector<int32_t> table;
};

std::vector<float> RandomQ(int64_t n, int seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<float> q(n);
  for (auto& x : q) x = dist(rng);
  return q;
}

TEST(PagedAttention, MatchesScalarOnEveryTarget) {
  const AttentionShape shape{6, 2, 40, 1.0f / std::sqrt(40.0f)};
  PagedFixture f(shape.n_kv_heads, shape.head_dim, /*block_size=*/5, /*n_blocks=*/12, 1);
  const int64_t n_tokens = 7;
  std::vector<int64_t> pos = {0, 1, 4, 5, 22, 40, 59};
  std::vector<float> q(n_tokens * shape.n_heads * shape.head_dim);
  std::mt19937 rng(2);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  for (auto& x : q) x = dist(rng);
  std::vector<float> want(q.size()), got(q.size());
  scalar::PagedAttention(q.data(), pos.data(), n_tokens, f.View(), shape, want.data());
  for (int64_t target : hwy::SupportedAndGeneratedTargets()) {
    hwy::SetSupportedTargetsForTest(target);
    for (int workers : {1, 2}) {
      ThreadPool pool(std::vector<int>(workers, 0), /*pin=*/false);
      PagedAttention(q.data(), pos.data(), n_tokens, f.View(), shape, got.data(), pool);
      for (size_t i = 0; i < want.size(); ++i) {
        ASSERT_NEAR(got[i], want[i], 1e-5f * (1.0f + std::abs(want[i])))
            << hwy::TargetName(target) << " i=" << i;
      }
    }
  }
  hwy::SetSupportedTargetsForTest(0);
}

// bf16 K/V: the SIMD kernel (widening on load) matches the scalar twin on every target, with
// head_dim 40 so that both the vector loop and the tail run.
TEST(PagedAttention, Bf16MatchesScalarOnEveryTarget) {
  const AttentionShape shape{6, 2, 40, 1.0f / std::sqrt(40.0f)};
  PagedFixture f(shape.n_kv_heads, shape.head_dim, /*block_size=*/5, /*n_blocks=*/12, 4);
  const PagedKv kv = f.Bf16View();
  std::vector<int64_t> pos = {0, 3, 9, 31, 59};
  const int64_t n_tokens = static_cast<int64_t>(pos.size());
  const std::vector<float> q = RandomQ(n_tokens * shape.n_heads * shape.head_dim, 5);
  std::vector<float> want(q.size()), got(q.size()), exact(q.size());
  scalar::PagedAttention(q.data(), pos.data(), n_tokens, kv, shape, want.data());
  scalar::PagedAttention(q.data(), pos.data(), n_tokens, f.View(), shape, exact.data());
  for (size_t i = 0; i < want.size(); ++i) {
    // bf16 keeps 8 mantissa bits: outputs (averages of unit-normal V) move by ~1e-2 at most.
    ASSERT_NEAR(want[i], exact[i], 2e-2f) << "bf16 vs f32 i=" << i;
  }
  for (int64_t target : hwy::SupportedAndGeneratedTargets()) {
    hwy::SetSupportedTargetsForTest(target);
    for (int workers : {1, 2}) {
      ThreadPool pool(std::vector<int>(workers, 0), /*pin=*/false);
      PagedAttention(q.data(), pos.data(), n_tokens, kv, shape, got.data(), pool);
      for (size_t i = 0; i < want.size(); ++i) {
        ASSERT_NEAR(got[i], want[i], 1e-5f * (1.0f + std::abs(want[i])))
            << hwy::TargetName(target) << " i=" << i;
      }
    }
  }
  hwy::SetSupportedTargetsForTest(0);
}

TEST(PagedAttention, FirstPositionReturnsItsValue) {
  const AttentionShape shape{2, 1, 8, 0.5f};
  PagedFixture f(1, 8, 4, 2, 3);
  std::vector<float> q(16, 1.0f), out(16);
  int64_t pos = 0;
  ThreadPool pool({0}, false);
  PagedAttention(q.data(), &pos, 1, f.View(), shape, out.data(), pool);
  const float* v0 = f.v.data() + f.table[0] * 4 * 8;
  for (int i = 0; i < 8; ++i) {
    EXPECT_FLOAT_EQ(out[i], v0[i]);
    EXPECT_FLOAT_EQ(out[8 + i], v0[i]);
  }
}

}  // namespace
}  // namespace kiln::kernels
