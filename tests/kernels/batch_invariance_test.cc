// Batch invariance of the kernels a forward pass runs per token row: a row's MatMul result must
// be bit-identical whatever the number of rows M in the call and wherever the row sits in it, so
// that a sequence generates the same tokens alone or inside any continuous batch.
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "kernel_test_util.h"
#include "kernels/ops.h"
#include "util/thread_pool.h"

namespace kiln::kernels {
namespace {

using testing::AllMatMulTypes;
using testing::ForEachTarget;
using testing::RandomFloats;
using testing::TestMatrix;

TEST(BatchInvariance, MatMulRowDoesNotDependOnBatch) {
  ThreadPool pool({0, 1}, /*pin=*/false);
  const int64_t n = 37, k = 288, max_m = 19;
  const std::vector<float> x = RandomFloats(max_m * k, 7);  // x [max_m, k]
  ForEachTarget([&] {
    for (DType dtype : AllMatMulTypes()) {
      SCOPED_TRACE(std::string(GetDTypeInfo(dtype).name));
      const TestMatrix w(dtype, n, k, 11);
      // Each row alone (M = 1) is the reference.
      std::vector<float> alone(max_m * n);
      for (int64_t r = 0; r < max_m; ++r) MatMul(w.m, &x[r * k], 1, &alone[r * n], pool);
      // Every M, starting at every offset: row r of the call is row first + r of x.
      for (int64_t m = 2; m <= max_m; ++m) {
        std::vector<float> y(m * n);
        for (int64_t first = 0; first + m <= max_m; first += 3) {
          MatMul(w.m, &x[first * k], m, y.data(), pool);
          ASSERT_EQ(std::memcmp(y.data(), &alone[first * n], y.size() * sizeof(float)), 0)
              << "M=" << m << " first row " << first;
        }
      }
    }
  });
}

// The same for GEMM-sized calls: M up to 75 (full 8-row tiles and every tail), and K = 16384,
// where the AVX3_DL quantized GEMM covers M in passes of 32 rows over its 16-row weight panels.
TEST(BatchInvariance, GemmSizedCallsMatchRowsAlone) {
  ThreadPool pool({0, 1}, /*pin=*/false);
  ForEachTarget([&] {
    for (DType dtype : AllMatMulTypes()) {
      for (auto [n, k] : {std::pair<int64_t, int64_t>{53, 1024}, {21, 16384}}) {
        SCOPED_TRACE(std::string(GetDTypeInfo(dtype).name) + " K=" + std::to_string(k));
        const int64_t max_m = 75;
        const TestMatrix w(dtype, n, k, 13);
        const std::vector<float> x = RandomFloats(max_m * k, 17);
        std::vector<float> alone(max_m * n);
        for (int64_t r = 0; r < max_m; ++r) MatMul(w.m, &x[r * k], 1, &alone[r * n], pool);
        for (int64_t m : {9, 33, 75}) {
          std::vector<float> y(m * n);
          MatMul(w.m, x.data(), m, y.data(), pool);
          ASSERT_EQ(std::memcmp(y.data(), alone.data(), y.size() * sizeof(float)), 0) << "M=" << m;
        }
      }
    }
  });
}

}  // namespace
}  // namespace kiln::kernels
