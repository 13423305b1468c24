#include <cmath>
#include <string>
#include <vector>

#include "kernel_test_util.h"
#include "kernels/ops.h"
#include "kernels/scalar_ops.h"
#include "util/error.h"
#include "util/thread_pool.h"

namespace kiln::kernels {
namespace {

using testing::ForEachTarget;
using testing::Near;
using testing::RandomFloats;

TEST(ScalarAttention, KnownValues) {
  ThreadPool pool({}, /*pin=*/false);
  // One head, head_dim 2, query at position 1: scores {0, ln 3} -> p = {1/4, 3/4}.
  const float q[] = {1.0f, 0.0f};
  const float k[] = {0.0f, 0.0f, std::log(3.0f), 0.0f};
  const float v[] = {1.0f, 2.0f, 3.0f, 4.0f};
  const int64_t pos[] = {1};
  float out[2];
  scalar::Attention(q, pos, 1, k, v, 1, 1, 2, 1.0f, out, pool);
  EXPECT_TRUE(Near(out[0], 2.5, 1e-6, 0));
  EXPECT_TRUE(Near(out[1], 3.5, 1e-6, 0));
  // At position 0 only the first row is visible.
  const int64_t pos0[] = {0};
  scalar::Attention(q, pos0, 1, k, v, 1, 1, 2, 1.0f, out, pool);
  EXPECT_EQ(out[0], 1.0f);
  EXPECT_EQ(out[1], 2.0f);
}

struct AttentionCase {
  int n_heads, n_kv_heads, head_dim;
  std::vector<int64_t> pos;
};

void ExpectAttentionMatchesScalar(const AttentionCase& c, ThreadPool& pool) {
  SCOPED_TRACE("heads " + std::to_string(c.n_heads) + "/" + std::to_string(c.n_kv_heads) +
               " head_dim " + std::to_string(c.head_dim) + " tokens " +
               std::to_string(c.pos.size()) + " threads " + std::to_string(pool.size()));
  const int64_t n_tokens = static_cast<int64_t>(c.pos.size());
  const int64_t n_ctx = c.pos.back() + 1;
  const std::vector<float> q = RandomFloats(n_tokens * c.n_heads * c.head_dim, 1, -2.0f, 2.0f);
  const std::vector<float> k = RandomFloats(n_ctx * c.n_kv_heads * c.head_dim, 2, -2.0f, 2.0f);
  const std::vector<float> v = RandomFloats(n_ctx * c.n_kv_heads * c.head_dim, 3);
  const float scale = 1.0f / std::sqrt(static_cast<float>(c.head_dim));
  std::vector<float> want(q.size()), got(q.size(), -7.0f);
  scalar::Attention(q.data(), c.pos.data(), n_tokens, k.data(), v.data(), c.n_heads, c.n_kv_heads,
                    c.head_dim, scale, want.data(), pool);
  Attention(q.data(), c.pos.data(), n_tokens, k.data(), v.data(), c.n_heads, c.n_kv_heads,
            c.head_dim, scale, got.data(), pool);
  for (size_t i = 0; i < want.size(); ++i) ASSERT_TRUE(Near(got[i], want[i], 1e-5, 2e-6)) << i;
}

TEST(Attention, MatchesScalarOnEveryTarget) {
  ThreadPool pool1({}, /*pin=*/false);
  ThreadPool pool2({0, 1}, /*pin=*/false);
  const std::vector<AttentionCase> cases = {
      {1, 1, 8, {0}},
      {4, 2, 64, {9}},              // decode, GQA group 2
      {9, 3, 64, {3, 4, 5, 6, 7}},  // prefill continuing a cached sequence
      {6, 6, 20, {0, 1, 2}},        // head_dim not a multiple of the vector width
      {8, 1, 128, {40}},            // multi-query
  };
  ForEachTarget([&] {
    for (const AttentionCase& c : cases) {
      ExpectAttentionMatchesScalar(c, pool1);
      ExpectAttentionMatchesScalar(c, pool2);
    }
  });
}

TEST(Attention, RejectsUnevenGroups) {
  ThreadPool pool({}, /*pin=*/false);
  const int64_t pos[] = {0};
  std::vector<float> buf(64);
  EXPECT_THROW(
      Attention(buf.data(), pos, 1, buf.data(), buf.data(), 3, 2, 8, 1.0f, buf.data(), pool),
      Error);
}

}  // namespace
}  // namespace kiln::kernels
