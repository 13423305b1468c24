#include <cstring>
#include <string>
#include <vector>

#include "kernel_test_util.h"
#include "kernels/ops.h"
#include "kernels/scalar_ops.h"
#include "util/error.h"
#include "util/half.h"
#include "util/thread_pool.h"

namespace kiln::kernels {
namespace {

using testing::AllMatMulTypes;
using testing::ForEachTarget;
using testing::Near;
using testing::RandomFloats;
using testing::TestMatrix;

// Compares MatMul with scalar::MatMul for y [m, N] = x [m, K] W^T. The tolerance scales with
// sum_k |x_k w_nk|: both sides use the same integer block dots (quantized) or the same products
// (float); only the order of the f32 accumulation differs.
void ExpectMatMulMatchesScalar(DType dtype, int64_t n, int64_t k, int64_t m, ThreadPool& pool) {
  SCOPED_TRACE(std::string(GetDTypeInfo(dtype).name) + " N=" + std::to_string(n) +
               " K=" + std::to_string(k) + " m=" + std::to_string(m) +
               " threads=" + std::to_string(pool.size()));
  const TestMatrix w(dtype, n, k, 1000 + static_cast<uint32_t>(n * 7 + k));
  const std::vector<float> x = RandomFloats(m * k, 2000 + static_cast<uint32_t>(m));
  std::vector<float> want(m * n), got(m * n, -1.0f), row(k);
  scalar::MatMul(w.m, x.data(), m, want.data(), pool);
  MatMul(w.m, x.data(), m, got.data(), pool);
  for (int64_t j = 0; j < n; ++j) {
    scalar::DequantizeRow(w.m, j, row.data());
    for (int64_t r = 0; r < m; ++r) {
      double l1 = 0.0;
      for (int64_t i = 0; i < k; ++i) l1 += std::fabs(x[r * k + i] * row[i]);
      ASSERT_TRUE(Near(got[r * n + j], want[r * n + j], 1e-5, 2e-6 * l1))
          << "y[" << r << ", " << j << "]";
    }
  }
}

TEST(MatMul, MatchesScalarOnEveryTarget) {
  ThreadPool pool1({}, /*pin=*/false);
  ThreadPool pool2({0, 1}, /*pin=*/false);
  // (N, K): K multiples of 32 with odd and even block counts, N around the row grain.
  const std::vector<std::pair<int64_t, int64_t>> shapes = {
      {1, 32}, {5, 64}, {17, 96}, {33, 160}, {70, 544}};
  ForEachTarget([&] {
    for (DType dtype : AllMatMulTypes()) {
      for (auto [n, k] : shapes) {
        for (int64_t m : {1, 3, 4, 5, 17}) {
          for (ThreadPool* pool : {&pool1, &pool2})
            ExpectMatMulMatchesScalar(dtype, n, k, m, *pool);
        }
      }
    }
  });
}

TEST(MatMul, LargerShapesMatchScalar) {
  ThreadPool pool2({0, 1}, /*pin=*/false);
  ForEachTarget([&] {
    for (DType dtype : AllMatMulTypes()) {
      ExpectMatMulMatchesScalar(dtype, 300, 2080, 1, pool2);  // 65 blocks per row
      ExpectMatMulMatchesScalar(dtype, 67, 1024, 17, pool2);
    }
  });
}

// GEMM-sized calls: full 8-row register tiles plus 4 / 2 / 1-row tails (M = 70), output columns
// in 16-row panels with a partial last panel on each worker (N = 50), and K = 16384, where the
// AVX3_DL quantized GEMM splits M into several passes over the panels (16 KiB of quants per row).
TEST(MatMul, GemmShapesMatchScalar) {
  ThreadPool pool1({}, /*pin=*/false);
  ThreadPool pool2({0, 1}, /*pin=*/false);
  ForEachTarget([&] {
    for (DType dtype : AllMatMulTypes()) {
      ExpectMatMulMatchesScalar(dtype, 50, 1056, 70, pool2);
      ExpectMatMulMatchesScalar(dtype, 50, 1056, 70, pool1);
      ExpectMatMulMatchesScalar(dtype, 20, 16384, 75, pool2);
    }
  });
}

TEST(MatMul, FloatWeightsWithOddK) {
  ThreadPool pool1({}, /*pin=*/false);
  ThreadPool pool2({0, 1}, /*pin=*/false);
  ForEachTarget([&] {
    for (DType dtype : {DType::kF32, DType::kF16, DType::kBF16}) {
      for (int64_t k : {1, 7, 33, 100}) {
        for (int64_t m : {1, 3, 17}) {
          ExpectMatMulMatchesScalar(dtype, 19, k, m, pool1);
          ExpectMatMulMatchesScalar(dtype, 19, k, m, pool2);
        }
      }
    }
  });
}

// One block of 32 weights against x = 1: x quantizes to q = 127, d_x = f16(1/127) =
// 0.00787353515625 and s_x = f16(4064 / 127) = 32.
struct OneBlock {
  std::vector<uint8_t> bytes;
  Matrix m;
  explicit OneBlock(DType t) : bytes(GetDTypeInfo(t).block_bytes) {
    m = Matrix{t, 1, 32, bytes.data(), bytes.size()};
  }
  void SetHalf(int offset, float v) {
    const uint16_t h = F32ToF16(v);
    std::memcpy(&bytes[offset], &h, 2);
  }
};

TEST(ScalarMatMul, HandComputedQuantizedDots) {
  ThreadPool pool({}, /*pin=*/false);
  const std::vector<float> x(32, 1.0f);
  float y = 0.0f;

  OneBlock q8(DType::kQ8_0);  // w_j = 0.5 (j - 16): sum = -8; ints: 127 * -16 = -2032
  q8.SetHalf(0, 0.5f);
  for (int j = 0; j < 32; ++j) q8.bytes[2 + j] = static_cast<uint8_t>(static_cast<int8_t>(j - 16));
  scalar::MatMul(q8.m, x.data(), 1, &y, pool);
  EXPECT_EQ(y, -7.99951171875f);  // 0.5 * d_x * -2032

  OneBlock q40(DType::kQ4_0);  // n_j = j % 16, w_j = 0.25 (n_j - 8): ints 127 * -16
  q40.SetHalf(0, 0.25f);
  for (int j = 0; j < 16; ++j) q40.bytes[2 + j] = static_cast<uint8_t>(j | (j << 4));
  scalar::MatMul(q40.m, x.data(), 1, &y, pool);
  EXPECT_EQ(y, -3.999755859375f);  // 0.25 * d_x * -2032

  OneBlock q41(DType::kQ4_1);  // w_j = 0.5 n_j - 1: ints 127 * 240, min term -1 * 32
  q41.SetHalf(0, 0.5f);
  q41.SetHalf(2, -1.0f);
  for (int j = 0; j < 16; ++j) q41.bytes[4 + j] = static_cast<uint8_t>(j | (j << 4));
  scalar::MatMul(q41.m, x.data(), 1, &y, pool);
  EXPECT_EQ(y, 87.99267578125f);  // 0.5 * d_x * 30480 - 32

  // The SIMD kernels agree exactly on a single block (no reordering to differ).
  ForEachTarget([&] {
    for (const OneBlock* b : {&q8, &q40, &q41}) {
      float want = 0.0f, got = 0.0f;
      scalar::MatMul(b->m, x.data(), 1, &want, pool);
      MatMul(b->m, x.data(), 1, &got, pool);
      EXPECT_EQ(got, want) << GetDTypeInfo(b->m.dtype).name;
    }
  });
}

TEST(ScalarMatMul, FloatDotIsPlainSum) {
  ThreadPool pool({}, /*pin=*/false);
  const float w_values[] = {1.0f, 2.0f, -3.0f, 0.5f, 4.0f, 5.0f, 6.0f, -7.0f};
  const float x[] = {1.0f, 1.0f, 1.0f, 2.0f};
  Matrix w{DType::kF32, 2, 4, reinterpret_cast<const uint8_t*>(w_values), 16};
  float y[2];
  scalar::MatMul(w, x, 1, y, pool);
  EXPECT_EQ(y[0], 1.0f);  // 1 + 2 - 3 + 1
  EXPECT_EQ(y[1], 1.0f);  // 4 + 5 + 6 - 14
  MatMul(w, x, 1, y, pool);
  EXPECT_EQ(y[0], 1.0f);
  EXPECT_EQ(y[1], 1.0f);
}

TEST(MatMul, KQuantsTakeTheirOwnPath) {
  ThreadPool pool({}, /*pin=*/false);
  std::vector<uint8_t> bytes(144);  // d = dmin = 0: every weight is 0
  const Matrix w{DType::kQ4_K, 1, 256, bytes.data(), bytes.size()};
  std::vector<float> x(256, 1.0f), y(1, 3.0f), y2(1, 3.0f);
  MatMul(w, x.data(), 1, y.data(), pool);
  EXPECT_EQ(y[0], 0.0f);
  const MatMulOutput outs[] = {{&w, y.data()}, {&w, y2.data()}};
  MatMulMulti(outs, x.data(), 1, pool);
  EXPECT_EQ(y2[0], 0.0f);
}

// MatMulMulti is MatMul over several weights in one pass: the same bits for every output,
// with mixed weight types (float and quantized share one call) and rows split across workers
// at matrix boundaries.
TEST(MatMul, MultiEqualsSeparateMatMuls) {
  ThreadPool pool1({}, /*pin=*/false);
  ThreadPool pool2({0, 1}, /*pin=*/false);
  const int64_t k = 96;
  const TestMatrix a(DType::kQ8_0, 37, k, 1), b(DType::kBF16, 19, k, 2), c(DType::kQ4_1, 8, k, 3),
      d(DType::kF32, 50, k, 4);
  ForEachTarget([&] {
    for (int64_t m : {1, 4, 5, 17}) {
      SCOPED_TRACE("m=" + std::to_string(m));
      const std::vector<float> x = RandomFloats(m * k, 7);
      for (ThreadPool* pool : {&pool1, &pool2}) {
        std::vector<std::vector<float>> want, got;
        std::vector<MatMulOutput> outs;
        for (const TestMatrix* t : {&a, &b, &c, &d}) {
          want.emplace_back(m * t->m.rows);
          got.emplace_back(m * t->m.rows, -1.0f);
          MatMul(t->m, x.data(), m, want.back().data(), *pool);
        }
        int i = 0;
        for (const TestMatrix* t : {&a, &b, &c, &d}) outs.push_back({&t->m, got[i++].data()});
        MatMulMulti(outs, x.data(), m, *pool);
        for (size_t o = 0; o < outs.size(); ++o) EXPECT_EQ(got[o], want[o]) << "output " << o;
      }
    }
  });
}

TEST(MatMul, MultiRejectsMismatchedColumns) {
  ThreadPool pool({}, /*pin=*/false);
  const TestMatrix a(DType::kF32, 4, 32, 1), b(DType::kF32, 4, 64, 2);
  std::vector<float> x(64), y(8);
  const MatMulOutput outs[] = {{&a.m, y.data()}, {&b.m, y.data() + 4}};
  EXPECT_THROW(MatMulMulti(outs, x.data(), 1, pool), Error);
}

// A row's result does not depend on M or on where the row sits in the batch (the per-row
// accumulation order is fixed by the tile code): row r of an M-row call equals a 1-row call.
TEST(MatMul, RowsAreBatchInvariant) {
  ThreadPool pool2({0, 1}, /*pin=*/false);
  const int64_t n = 70, k = 544;
  ForEachTarget([&] {
    for (DType dtype : AllMatMulTypes()) {
      SCOPED_TRACE(GetDTypeInfo(dtype).name);
      const TestMatrix w(dtype, n, k, 11);
      const std::vector<float> x = RandomFloats(7 * k, 12);
      std::vector<float> all(7 * n), one(n);
      MatMul(w.m, x.data(), 7, all.data(), pool2);
      for (int64_t r = 0; r < 7; ++r) {
        MatMul(w.m, x.data() + r * k, 1, one.data(), pool2);
        for (int64_t j = 0; j < n; ++j) ASSERT_EQ(all[r * n + j], one[j]) << r << ", " << j;
      }
    }
  });
}

TEST(MatMul, ZeroRowsIsANoOp) {
  ThreadPool pool({}, /*pin=*/false);
  const TestMatrix w(DType::kQ4_1, 4, 64, 1);
  std::vector<float> y(4, 3.0f);
  MatMul(w.m, nullptr, 0, y.data(), pool);
  EXPECT_EQ(y[0], 3.0f);
}

}  // namespace
}  // namespace kiln::kernels
