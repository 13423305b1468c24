#include "kernels/paged_attention.h"

#include <gtest/gtest.h>
#include <hwy/targets.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <random>
#include <string>
#include <tuple>
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
    return PagedKv{k.data(),    v.data(), block_size * kv_dim, block_size, table.data(),
                   DType::kF32, layout};
  }
  // The same pool rounded to `dtype` (kBF16 or kF16, as PagedKvCache stores it with
  // --kv-cache-dtype bf16 / f16); kF32 is View().
  PagedKv HalfView(DType dtype) {
    if (dtype == DType::kF32) return View();
    const auto narrow = dtype == DType::kF16 ? F32ToF16 : F32ToBf16;
    k16.resize(k.size());
    v16.resize(v.size());
    std::transform(k.begin(), k.end(), k16.begin(), narrow);
    std::transform(v.begin(), v.end(), v16.begin(), narrow);
    return PagedKv{k16.data(), v16.data(), block_size * kv_dim, block_size, table.data(),
                   dtype,      layout};
  }
  int64_t kv_dim, block_size;
  KvLayout layout = KvLayout::kPositionMajor;  // how View() reads the same pool
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

constexpr KvLayout kLayouts[] = {KvLayout::kPositionMajor, KvLayout::kHeadMajor};

TEST(PagedAttention, MatchesScalarOnEveryTarget) {
  const AttentionShape shape{6, 2, 40, 1.0f / std::sqrt(40.0f)};
  PagedFixture f(shape.n_kv_heads, shape.head_dim, /*block_size=*/5, /*n_blocks=*/12, 1);
  for (KvLayout layout : kLayouts) {
    f.layout = layout;
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
}

// bf16 and f16 K/V: the SIMD kernel (widening on load) matches the scalar twin on every target,
// with head_dim 40 so that both the vector loop and the tail run.
class HalfKv : public ::testing::TestWithParam<DType> {};

TEST_P(HalfKv, MatchesScalarOnEveryTarget) {
  const AttentionShape shape{6, 2, 40, 1.0f / std::sqrt(40.0f)};
  PagedFixture f(shape.n_kv_heads, shape.head_dim, /*block_size=*/5, /*n_blocks=*/12, 4);
  for (KvLayout layout : kLayouts) {
    f.layout = layout;
    const PagedKv kv = f.HalfView(GetParam());
    std::vector<int64_t> pos = {0, 3, 9, 31, 59};
    const int64_t n_tokens = static_cast<int64_t>(pos.size());
    const std::vector<float> q = RandomQ(n_tokens * shape.n_heads * shape.head_dim, 5);
    std::vector<float> want(q.size()), got(q.size()), exact(q.size());
    scalar::PagedAttention(q.data(), pos.data(), n_tokens, kv, shape, want.data());
    scalar::PagedAttention(q.data(), pos.data(), n_tokens, f.View(), shape, exact.data());
    // bf16 keeps 8 mantissa bits, f16 11: outputs (averages of unit-normal V) move by ~1e-2 and
    // ~2e-3 at most.
    const float rounding = GetParam() == DType::kF16 ? 3e-3f : 2e-2f;
    for (size_t i = 0; i < want.size(); ++i) {
      ASSERT_NEAR(want[i], exact[i], rounding) << "half vs f32 i=" << i;
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
}

INSTANTIATE_TEST_SUITE_P(PagedAttention, HalfKv, ::testing::Values(DType::kBF16, DType::kF16),
                         [](const auto& info) {
                           return std::string(GetDTypeInfo(info.param).name);
                         });

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

// Several sequences in one call (own block tables over one pool) match the scalar twin, on every
// target, for head dims that take each scoring path (q in registers for 4 or 8 vectors, or not),
// both layouts, and cache blocks smaller than a key block (rows found one by one) or not (a key
// block's rows in one cache block).
TEST(PagedAttention, MultiSequenceMatchesScalar) {
  for (auto [head_dim, block_size, layout] :
       {std::tuple{32, 4, KvLayout::kPositionMajor}, std::tuple{64, 4, KvLayout::kPositionMajor},
        std::tuple{128, 4, KvLayout::kPositionMajor}, std::tuple{32, 16, KvLayout::kHeadMajor},
        std::tuple{64, 16, KvLayout::kHeadMajor}, std::tuple{128, 4, KvLayout::kHeadMajor}}) {
    const AttentionShape shape{8, 2, head_dim, 1.0f / std::sqrt(static_cast<float>(head_dim))};
    PagedFixture f(shape.n_kv_heads, shape.head_dim, block_size, /*n_blocks=*/40, 6);
    f.layout = layout;
    // seq 0: prefill rows 0..5 at positions 10..15 (table[0..]), seq 1: decode row 6 at
    // position 37 (table[20..]), seq 2: decode row 7 at position 0 (table[30..]).
    const std::vector<int64_t> pos = {10, 11, 12, 13, 14, 15, 37, 0};
    const std::vector<PagedSeq> seqs = {
        {f.table.data(), 0, 6}, {f.table.data() + 20, 6, 1}, {f.table.data() + 30, 7, 1}};
    const int64_t row = shape.n_heads * shape.head_dim;
    const std::vector<float> q = RandomQ(8 * row, 7);
    std::vector<float> want(q.size()), got(q.size());
    for (const PagedSeq& s : seqs) {
      PagedKv kv = f.View();
      kv.block_table = s.block_table;
      scalar::PagedAttention(&q[s.token_begin * row], &pos[s.token_begin], s.token_count, kv, shape,
                             &want[s.token_begin * row]);
    }
    for (int64_t target : hwy::SupportedAndGeneratedTargets()) {
      hwy::SetSupportedTargetsForTest(target);
      ThreadPool pool(std::vector<int>(2, 0), /*pin=*/false);
      PagedAttention(q.data(), pos.data(), seqs, f.View(), shape, got.data(), pool);
      for (size_t i = 0; i < want.size(); ++i) {
        ASSERT_NEAR(got[i], want[i], 1e-5f * (1.0f + std::abs(want[i])))
            << hwy::TargetName(target) << " head_dim=" << head_dim << " block=" << block_size
            << " i=" << i;
      }
    }
    hwy::SetSupportedTargetsForTest(0);
  }
}

// Batch invariance, bitwise: a query's output computed alone (one token, one worker) equals the
// same query inside a decode batch of many sequences or a long prefill chunk, with 1 or 2
// workers, on every target, for f32, bf16 and f16 K/V (SmolLM2's shape: 9 heads over 3 kv heads).
// head_dim 64 runs whole vectors only; 40 and 8 (stories260K's) also the scalar tails, where a
// prefill chunk (K/V rows widened to f32 once) must still match each token decoded alone.
// Llama-3.2-1B's 4 and Qwen2.5-0.5B's 7 query heads per kv head, and head_dim 128, on the
// head-major layout of the KV cache, cover every count of rows sharing a K / V load.
struct InvariantCase {
  int head_dim, n_heads, n_kv_heads;
  KvLayout layout;
};

class BatchInvariant : public ::testing::TestWithParam<InvariantCase> {};

TEST_P(BatchInvariant, Bitwise) {
  const int head_dim = GetParam().head_dim;
  const AttentionShape shape{GetParam().n_heads, GetParam().n_kv_heads, head_dim,
                             1.0f / std::sqrt(static_cast<float>(head_dim))};
  const int64_t block_size = 16, blocks_per_seq = 20, n_seqs = 8;
  PagedFixture f(shape.n_kv_heads, shape.head_dim, block_size, blocks_per_seq * n_seqs, 8);
  f.layout = GetParam().layout;
  const int64_t row = shape.n_heads * shape.head_dim;
  auto same_bits = [](float a, float b) {
    return std::bit_cast<uint32_t>(a) == std::bit_cast<uint32_t>(b);
  };
  for (DType dtype : {DType::kF32, DType::kBF16, DType::kF16}) {
    const PagedKv base = f.HalfView(dtype);
    auto kv_of = [&](int64_t seq) {
      PagedKv kv = base;
      kv.block_table = f.table.data() + seq * blocks_per_seq;
      return kv;
    };
    // Decode: one token per sequence at scattered positions. Prefill: sequence 0, positions
    // 100..299 as one chunk.
    std::vector<int64_t> pos;
    std::vector<PagedSeq> decode;
    for (int64_t s = 0; s < n_seqs; ++s) {
      decode.push_back({f.table.data() + s * blocks_per_seq, s, 1});
      pos.push_back((s * 97 + 13) % (block_size * blocks_per_seq));
    }
    const int64_t chunk = 200;
    for (int64_t t = 0; t < chunk; ++t) pos.push_back(100 + t);
    const PagedSeq prefill{f.table.data(), n_seqs, chunk};
    const int64_t n = static_cast<int64_t>(pos.size());
    const std::vector<float> q = RandomQ(n * row, 9);
    for (int64_t target : hwy::SupportedAndGeneratedTargets()) {
      hwy::SetSupportedTargetsForTest(target);
      ThreadPool one({0}, /*pin=*/false);
      std::vector<float> alone(n * row), got(n * row);
      for (int64_t t = 0; t < n; ++t) {
        const int64_t seq = t < n_seqs ? t : 0;
        PagedAttention(&q[t * row], &pos[t], 1, kv_of(seq), shape, &alone[t * row], one);
      }
      for (int workers : {1, 2}) {
        ThreadPool pool(std::vector<int>(workers, 0), /*pin=*/false);
        std::fill(got.begin(), got.end(), 0.0f);
        PagedAttention(q.data(), pos.data(), decode, base, shape, got.data(), pool);
        PagedAttention(&q[n_seqs * row], &pos[n_seqs], chunk, kv_of(0), shape, &got[n_seqs * row],
                       pool);
        for (int64_t i = 0; i < n * row; ++i) {
          ASSERT_TRUE(same_bits(got[i], alone[i]))
              << hwy::TargetName(target) << " " << GetDTypeInfo(dtype).name
              << " workers=" << workers << " token=" << i / row << " got=" << got[i]
              << " alone=" << alone[i];
        }
        // The multi-sequence call with decode and prefill mixed gives the same bits.
        std::vector<PagedSeq> mixed = decode;
        mixed.push_back(prefill);
        std::fill(got.begin(), got.end(), 0.0f);
        PagedAttention(q.data(), pos.data(), mixed, base, shape, got.data(), pool);
        for (int64_t i = 0; i < n * row; ++i) {
          ASSERT_TRUE(same_bits(got[i], alone[i])) << hwy::TargetName(target) << " mixed i=" << i;
        }
      }
    }
    hwy::SetSupportedTargetsForTest(0);
  }
}

INSTANTIATE_TEST_SUITE_P(PagedAttention, BatchInvariant,
                         ::testing::Values(InvariantCase{64, 9, 3, KvLayout::kPositionMajor},
                                           InvariantCase{40, 9, 3, KvLayout::kPositionMajor},
                                           InvariantCase{8, 9, 3, KvLayout::kPositionMajor},
                                           InvariantCase{64, 32, 8, KvLayout::kHeadMajor},
                                           InvariantCase{64, 14, 2, KvLayout::kHeadMajor},
                                           InvariantCase{128, 12, 2, KvLayout::kHeadMajor}),
                         [](const ::testing::TestParamInfo<InvariantCase>& p) {
                           return "head_dim_" + std::to_string(p.param.head_dim) + "_heads_" +
                                  std::to_string(p.param.n_heads) + "_" +
                                  std::to_string(p.param.n_kv_heads) +
                                  (p.param.layout == KvLayout::kHeadMajor ? "_head_major" : "");
                         });

}  // namespace
}  // namespace kiln::kernels
