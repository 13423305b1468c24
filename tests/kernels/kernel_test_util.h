// Helpers shared by the kernel tests: per-target runs, random data, quantized matrices.
#pragma once

// clang-format off
#include "kernels/hwy_config.h"  // before any hwy header: the tests must see the kernels' targets
// clang-format on

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <random>
#include <vector>

#include "hwy/highway.h"
#include "kernels/ops.h"
#include "kernels/scalar_ops.h"
#include "util/dtype.h"

namespace kiln::kernels::testing {

// Runs body() once per compiled target that this CPU supports, with dispatch forced to it.
inline void ForEachTarget(const std::function<void()>& body) {
  struct Restore {
    ~Restore() { hwy::SetSupportedTargetsForTest(0); }
  } restore;
  for (int64_t target : hwy::SupportedAndGeneratedTargets()) {
    hwy::SetSupportedTargetsForTest(target);
    SCOPED_TRACE(hwy::TargetName(target));
    ASSERT_STREQ(ActiveTargetName(), hwy::TargetName(target));
    body();
  }
}

inline std::vector<float> RandomFloats(int64_t n, uint32_t seed, float lo = -1.0f,
                                       float hi = 1.0f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (float& f : v) f = dist(rng);
  return v;
}

// A [rows, cols] weight matrix of `dtype` built from random floats via QuantizeRow.
struct TestMatrix {
  std::vector<uint8_t> bytes;
  Matrix m;

  TestMatrix(DType dtype, int64_t rows, int64_t cols, uint32_t seed) {
    const uint64_t row_bytes = *BytesForElements(dtype, cols);
    bytes.resize(row_bytes * rows);
    const std::vector<float> values = RandomFloats(rows * cols, seed);
    for (int64_t r = 0; r < rows; ++r) {
      scalar::QuantizeRow(dtype, &values[r * cols], cols, &bytes[r * row_bytes]);
    }
    m = Matrix{dtype, rows, cols, bytes.data(), row_bytes};
  }
};

// |a - b| <= rel * |b| + abs.
inline ::testing::AssertionResult Near(float a, float b, double rel, double abs) {
  const double err = std::fabs(static_cast<double>(a) - b);
  if (err <= rel * std::fabs(b) + abs) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << a << " vs " << b << " (err " << err << ")";
}

inline const std::vector<DType>& AllMatMulTypes() {
  static const std::vector<DType> types = {DType::kF32,  DType::kF16,  DType::kBF16,
                                           DType::kQ8_0, DType::kQ4_0, DType::kQ4_1};
  return types;
}

}  // namespace kiln::kernels::testing
