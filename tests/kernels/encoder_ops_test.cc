// LayerNorm and GELU (encoder kernels): the scalar twins against closed forms, and every
// target against the scalar twins.
#include <cmath>
#include <vector>

#include "kernel_test_util.h"
#include "kernels/ops.h"
#include "kernels/scalar_ops.h"

namespace kiln::kernels {
namespace {

using testing::ForEachTarget;
using testing::Near;
using testing::RandomFloats;

const std::vector<int64_t> kSizes = {1, 5, 16, 33, 384, 1001};

TEST(ScalarLayerNorm, KnownValues) {
  const float x[] = {1.0f, 2.0f, 3.0f, 4.0f};
  const float w[] = {1.0f, 2.0f, 1.0f, 1.0f};
  const float b[] = {0.0f, 0.0f, 0.5f, 0.0f};
  float out[4];
  scalar::LayerNorm(x, w, b, 4, 0.0f, out);
  const double s = std::sqrt(1.25);  // mean 2.5, variance (2.25 + 0.25) * 2 / 4
  EXPECT_TRUE(Near(out[0], -1.5 / s, 1e-6, 0));
  EXPECT_TRUE(Near(out[1], 2 * -0.5 / s, 1e-6, 0));
  EXPECT_TRUE(Near(out[2], 0.5 / s + 0.5, 1e-6, 0));
  EXPECT_TRUE(Near(out[3], 1.5 / s, 1e-6, 0));
}

TEST(LayerNorm, MatchesScalarOnEveryTarget) {
  ForEachTarget([] {
    for (int64_t n : kSizes) {
      // A large common offset: the two-pass variance must keep its digits.
      std::vector<float> x = RandomFloats(n, 1, -4.0f, 4.0f);
      for (float& v : x) v += 300.0f;
      const std::vector<float> w = RandomFloats(n, 2), b = RandomFloats(n, 3);
      std::vector<float> want(n), got(n), in_place = x;
      scalar::LayerNorm(x.data(), w.data(), b.data(), n, 1e-12f, want.data());
      LayerNorm(x.data(), w.data(), b.data(), n, 1e-12f, got.data());
      LayerNorm(in_place.data(), w.data(), b.data(), n, 1e-12f, in_place.data());
      for (int64_t i = 0; i < n; ++i) {
        ASSERT_TRUE(Near(got[i], want[i], 1e-4, 1e-4)) << "n " << n << " i " << i;
        ASSERT_EQ(in_place[i], got[i]);
      }
    }
  });
}

TEST(ScalarGelu, KnownValues) {
  const float x[] = {0.0f, 1.0f, -1.0f, 3.0f};
  float erf_out[4], tanh_out[4];
  scalar::Gelu(x, 4, GeluStyle::kErf, erf_out);
  scalar::Gelu(x, 4, GeluStyle::kTanh, tanh_out);
  EXPECT_EQ(erf_out[0], 0.0f);
  EXPECT_TRUE(Near(erf_out[1], 0.8413447460685429, 1e-7, 0));
  EXPECT_TRUE(Near(erf_out[2], -0.15865525393145707, 1e-7, 0));
  EXPECT_TRUE(Near(erf_out[3], 2.995950070, 1e-7, 0));
  EXPECT_TRUE(Near(tanh_out[1], 0.8411919906082768, 1e-7, 0));
}

TEST(Gelu, MatchesScalarOnEveryTarget) {
  ForEachTarget([] {
    for (GeluStyle style : {GeluStyle::kErf, GeluStyle::kTanh}) {
      for (int64_t n : kSizes) {
        // Wide enough to reach both tails (erfc underflow, tanh saturation).
        std::vector<float> x = RandomFloats(n, 4, -12.0f, 12.0f);
        std::vector<float> want(n), got(n);
        scalar::Gelu(x.data(), n, style, want.data());
        Gelu(x.data(), n, style, got.data());
        for (int64_t i = 0; i < n; ++i) {
          ASSERT_TRUE(Near(got[i], want[i], 2e-6, 1e-7))
              << "n " << n << " i " << i << " x " << x[i];
        }
        Gelu(x.data(), n, style, x.data());  // in place
        for (int64_t i = 0; i < n; ++i) ASSERT_EQ(x[i], got[i]);
      }
    }
  });
}

// Against the causal kernel's scalar twin with every query at the last position (which sees
// all keys): the same attention, summed in another order.
TEST(BidirectionalAttention, MatchesScalarOnEveryTarget) {
  ThreadPool pool({});
  ForEachTarget([&] {
    for (int64_t n : {1, 3, 17, 64}) {
      for (int hd : {8, 32, 36}) {
        const int heads = 3;
        const int64_t stride = heads * hd + 5;  // rows wider than the heads, as in a batch
        const std::vector<float> q = RandomFloats(n * stride, 5, -2, 2);
        const std::vector<float> k = RandomFloats(n * stride, 6, -2, 2);
        const std::vector<float> v = RandomFloats(n * stride, 7);
        std::vector<float> got(n * stride, -7.0f);
        BidirectionalAttention(q.data(), k.data(), v.data(), n, stride, heads, hd, 0.2f, got.data(),
                               pool);
        // The twin takes dense [n, heads, hd]: copy the heads' columns out.
        std::vector<float> qd(n * heads * hd), kd(qd.size()), vd(qd.size()), want(qd.size());
        for (int64_t t = 0; t < n; ++t) {
          for (int64_t c = 0; c < heads * hd; ++c) {
            qd[t * heads * hd + c] = q[t * stride + c];
            kd[t * heads * hd + c] = k[t * stride + c];
            vd[t * heads * hd + c] = v[t * stride + c];
          }
        }
        const std::vector<int64_t> pos(n, n - 1);
        scalar::Attention(qd.data(), pos.data(), n, kd.data(), vd.data(), heads, heads, hd, 0.2f,
                          want.data(), pool);
        for (int64_t t = 0; t < n; ++t) {
          for (int64_t c = 0; c < heads * hd; ++c) {
            ASSERT_TRUE(Near(got[t * stride + c], want[t * heads * hd + c], 1e-5, 1e-6))
                << "n " << n << " hd " << hd << " t " << t << " c " << c;
          }
          for (int64_t c = heads * hd; c < stride; ++c) ASSERT_EQ(got[t * stride + c], -7.0f);
        }
      }
    }
  });
}

}  // namespace
}  // namespace kiln::kernels
