// RmsNorm, Rope, SiluMul, AddInPlace, Softmax: exact values of the scalar twins, and every
// target against them.
#include "kernels/ops.h"

#include <cmath>
#include <cstdio>
#include <limits>
#include <string>
#include <vector>

#include "kernel_test_util.h"
#include "kernels/scalar_ops.h"

namespace kiln::kernels {
namespace {

using testing::ForEachTarget;
using testing::Near;
using testing::RandomFloats;

const std::vector<int64_t> kSizes = {1, 5, 16, 33, 64, 576, 1001};

TEST(Targets, ScalarFallbackIsAlwaysTested) {
  std::string names;
  for (int64_t t : hwy::SupportedAndGeneratedTargets())
    names += std::string(hwy::TargetName(t)) + " ";
  std::printf("kernel targets on this CPU: %s(active: %s)\n", names.c_str(), ActiveTargetName());
  EXPECT_NE(names.find("SCALAR"), std::string::npos);
}

TEST(ScalarRmsNorm, KnownValues) {
  const float x[] = {1.0f, 2.0f, 3.0f, 4.0f};
  const float w[] = {1.0f, 1.0f, 2.0f, 0.5f};
  float out[4];
  scalar::RmsNorm(x, w, 4, 0.0f, out);
  const double r = 1.0 / std::sqrt(7.5);  // mean of squares = 30 / 4
  EXPECT_TRUE(Near(out[0], r, 1e-6, 0));
  EXPECT_TRUE(Near(out[1], 2 * r, 1e-6, 0));
  EXPECT_TRUE(Near(out[2], 6 * r, 1e-6, 0));
  EXPECT_TRUE(Near(out[3], 2 * r, 1e-6, 0));
  scalar::RmsNorm(x, w, 4, 2.5f, out);  // eps: 1 / sqrt(7.5 + 2.5)
  EXPECT_TRUE(Near(out[0], 1.0 / std::sqrt(10.0), 1e-6, 0));
}

TEST(RmsNorm, MatchesScalarOnEveryTarget) {
  ForEachTarget([] {
    for (int64_t n : kSizes) {
      const std::vector<float> x = RandomFloats(n, 1, -4.0f, 4.0f);
      const std::vector<float> w = RandomFloats(n, 2);
      std::vector<float> want(n), got(n), in_place = x;
      scalar::RmsNorm(x.data(), w.data(), n, 1e-6f, want.data());
      RmsNorm(x.data(), w.data(), n, 1e-6f, got.data());
      RmsNorm(in_place.data(), w.data(), n, 1e-6f, in_place.data());
      for (int64_t i = 0; i < n; ++i) {
        ASSERT_TRUE(Near(got[i], want[i], 2e-6, 1e-7)) << "n " << n << " i " << i;
        ASSERT_EQ(in_place[i], got[i]);
      }
    }
  });
}

TEST(ScalarRope, KnownValues) {
  const float inv_freq[] = {1.0f, 0.5f};
  const double c2 = std::cos(2.0), s2 = std::sin(2.0), c1 = std::cos(1.0), s1 = std::sin(1.0);
  // pos 2: pair 0 turns by 2 rad, pair 1 by 1 rad.
  float half[] = {1.0f, 2.0f, 3.0f, 4.0f};  // pairs (x0, x2), (x1, x3)
  scalar::Rope(half, 1, 4, inv_freq, 2, RopeStyle::kHalf);
  EXPECT_TRUE(Near(half[0], 1 * c2 - 3 * s2, 1e-6, 1e-7));
  EXPECT_TRUE(Near(half[2], 3 * c2 + 1 * s2, 1e-6, 1e-7));
  EXPECT_TRUE(Near(half[1], 2 * c1 - 4 * s1, 1e-6, 1e-7));
  EXPECT_TRUE(Near(half[3], 4 * c1 + 2 * s1, 1e-6, 1e-7));
  float inter[] = {1.0f, 2.0f, 3.0f, 4.0f};  // pairs (x0, x1), (x2, x3)
  scalar::Rope(inter, 1, 4, inv_freq, 2, RopeStyle::kInterleaved);
  EXPECT_TRUE(Near(inter[0], 1 * c2 - 2 * s2, 1e-6, 1e-7));
  EXPECT_TRUE(Near(inter[1], 2 * c2 + 1 * s2, 1e-6, 1e-7));
  EXPECT_TRUE(Near(inter[2], 3 * c1 - 4 * s1, 1e-6, 1e-7));
  EXPECT_TRUE(Near(inter[3], 4 * c1 + 3 * s1, 1e-6, 1e-7));
  float at_zero[] = {1.0f, 2.0f, 3.0f, 4.0f};
  scalar::Rope(at_zero, 1, 4, inv_freq, 0, RopeStyle::kHalf);
  EXPECT_EQ(at_zero[0], 1.0f);
  EXPECT_EQ(at_zero[3], 4.0f);
}

TEST(Rope, BitIdenticalToScalarOnEveryTarget) {
  ForEachTarget([] {
    for (RopeStyle style : {RopeStyle::kHalf, RopeStyle::kInterleaved}) {
      for (int head_dim : {2, 6, 64, 80, 128}) {
        std::vector<float> inv_freq(head_dim / 2);
        for (int i = 0; i < head_dim / 2; ++i) {
          inv_freq[i] = 1.0f / std::pow(10000.0f, 2.0f * i / head_dim);
        }
        for (int64_t pos : {0, 1, 17, 4095, 100000}) {
          const int heads = 3;
          std::vector<float> want = RandomFloats(heads * head_dim, 3), got = want;
          scalar::Rope(want.data(), heads, head_dim, inv_freq.data(), pos, style);
          Rope(got.data(), heads, head_dim, inv_freq.data(), pos, style);
          for (int i = 0; i < heads * head_dim; ++i) {
            ASSERT_EQ(got[i], want[i]) << "head_dim " << head_dim << " pos " << pos << " i " << i;
          }
        }
      }
    }
  });
}

TEST(ScalarActivations, KnownValues) {
  const float gate[] = {0.0f, 1.0f, -1.0f};
  const float up[] = {5.0f, 2.0f, 1.0f};
  float out[3];
  scalar::SiluMul(gate, up, 3, out);
  EXPECT_EQ(out[0], 0.0f);
  EXPECT_TRUE(Near(out[1], 2.0 / (1.0 + std::exp(-1.0)), 1e-6, 0));
  EXPECT_TRUE(Near(out[2], -1.0 / (1.0 + std::exp(1.0)), 1e-6, 0));

  float x[] = {0.0f, std::log(2.0f), std::log(3.0f)};
  scalar::Softmax(x, 3);
  EXPECT_TRUE(Near(x[0], 1.0 / 6, 1e-6, 0));
  EXPECT_TRUE(Near(x[1], 2.0 / 6, 1e-6, 0));
  EXPECT_TRUE(Near(x[2], 3.0 / 6, 1e-6, 0));

  float y[] = {1.0f, 2.0f};
  const float add[] = {0.5f, -2.0f};
  scalar::AddInPlace(y, add, 2);
  EXPECT_EQ(y[0], 1.5f);
  EXPECT_EQ(y[1], 0.0f);
}

TEST(Activations, MatchScalarOnEveryTarget) {
  ForEachTarget([] {
    for (int64_t n : kSizes) {
      const std::vector<float> gate = RandomFloats(n, 4, -12.0f, 12.0f);
      const std::vector<float> up = RandomFloats(n, 5, -3.0f, 3.0f);
      std::vector<float> want(n), got(n), aliased = gate;
      scalar::SiluMul(gate.data(), up.data(), n, want.data());
      SiluMul(gate.data(), up.data(), n, got.data());
      SiluMul(aliased.data(), up.data(), n, aliased.data());
      for (int64_t i = 0; i < n; ++i) {
        ASSERT_TRUE(Near(got[i], want[i], 1e-6, 1e-30)) << "silu n " << n << " i " << i;
        ASSERT_EQ(aliased[i], got[i]);
      }

      std::vector<float> y_want = up, y_got = up;
      scalar::AddInPlace(y_want.data(), gate.data(), n);
      AddInPlace(y_got.data(), gate.data(), n);
      for (int64_t i = 0; i < n; ++i) ASSERT_EQ(y_got[i], y_want[i]);

      std::vector<float> a = RandomFloats(n, 7, -30.0f, 30.0f);
      ASSERT_EQ(ArgMax(a.data(), n), scalar::ArgMax(a.data(), n)) << "argmax n " << n;

      std::vector<float> s_want = RandomFloats(n, 6, -30.0f, 30.0f), s_got = s_want;
      scalar::Softmax(s_want.data(), n);
      Softmax(s_got.data(), n);
      for (int64_t i = 0; i < n; ++i) {
        ASSERT_TRUE(Near(s_got[i], s_want[i], 2e-6, 1e-30)) << "softmax n " << n << " i " << i;
      }
    }
  });
}

// Ties go to the first index, NaN never wins, all -inf / NaN gives 0: on every target, with the
// special values in the vector body and in the scalar tail.
TEST(Activations, ArgMaxEdgeCasesOnEveryTarget) {
  ForEachTarget([] {
    const float nan = std::numeric_limits<float>::quiet_NaN();
    const float inf = std::numeric_limits<float>::infinity();
    for (int64_t n : {3, 37, 1001}) {
      std::vector<float> x(n, -1.0f);
      x[n / 2] = 5.0f, x[n - 1] = 5.0f, x[0] = nan;
      EXPECT_EQ(ArgMax(x.data(), n), n / 2) << n;
      EXPECT_EQ(scalar::ArgMax(x.data(), n), n / 2) << n;
      std::vector<float> banned(n, -inf);
      banned[n - 1] = nan;
      EXPECT_EQ(ArgMax(banned.data(), n), 0) << n;
      EXPECT_EQ(scalar::ArgMax(banned.data(), n), 0) << n;
      x[n - 1] = inf;
      EXPECT_EQ(ArgMax(x.data(), n), n - 1) << n;
    }
    EXPECT_EQ(ArgMax(nullptr, 0), 0);
  });
}

TEST(Activations, SiluOfLargeNegativeGateIsZero) {
  ForEachTarget([] {
    const float gate[] = {-200.0f, -90.0f, 200.0f};
    const float up[] = {1.0f, 1.0f, 1.0f};
    float out[3];
    SiluMul(gate, up, 3, out);
    EXPECT_NEAR(out[0], 0.0f, 1e-30);
    EXPECT_NEAR(out[1], 0.0f, 1e-30);
    EXPECT_EQ(out[2], 200.0f);
  });
}

}  // namespace
}  // namespace kiln::kernels
