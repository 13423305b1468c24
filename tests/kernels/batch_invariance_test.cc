// Batch invariance of the kernels a forward pass runs per token row: a row's MatMul result must
// be bit-identical whatever the number of rows M in the call and wherever the row sits in it, so
// that a sequence generates the same tokens alone or inside any continuous batch.
#include <cstring>
#include <string>
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

}  // namespace
}  // namespace kiln::kernels
