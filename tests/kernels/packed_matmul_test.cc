// Weights packed at load (PackMatrix, Matrix::packed): quantized panels give bit-identical
// MatMul results to the stored layout; float panels (a different, fixed summation order) match
// the scalar twin and are batch invariant bit for bit. Every M (decode tiles and GEMM), partial
// last panels, odd block counts and odd K, worker ranges that start inside a panel.
#include <cmath>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "kernel_test_util.h"
#include "kernels/ops.h"
#include "kernels/scalar_ops.h"
#include "util/error.h"
#include "util/huge_buffer.h"
#include "util/thread_pool.h"

namespace kiln::kernels {
namespace {

using testing::ForEachTarget;
using testing::Near;
using testing::RandomFloats;
using testing::TestMatrix;

bool IsFloat(DType dtype) {
  return dtype == DType::kF32 || dtype == DType::kF16 || dtype == DType::kBF16;
}

// Whether the active target packs `dtype`: AVX3_DL (AVX-512 VNNI) packs the quantized types
// into 16-row VNNI panels and AVX2 into 8-row panels; AVX2 and AVX-512 pack float weights into
// f32-lane panels.
bool TargetPacks(DType dtype) {
  const std::string target = ActiveTargetName();
  if (IsFloat(dtype)) return target == "AVX2" || target == "AVX3" || target == "AVX3_DL";
  return target == "AVX3_DL" || target == "AVX2";
}

// A TestMatrix with its packed copy (w.m.packed stays null when this target does not pack).
struct PackedTestMatrix {
  TestMatrix w;
  HugeBuffer buffer;
  Matrix packed;

  PackedTestMatrix(DType dtype, int64_t rows, int64_t cols, uint32_t seed)
      : w(dtype, rows, cols, seed), packed(w.m) {
    const uint64_t bytes = PackedMatrixBytes(w.m);
    if (bytes == 0) return;
    buffer = HugeBuffer(bytes);
    PackMatrix(w.m, buffer.data());
    packed.packed = buffer.data();
  }
};

using Shape = std::pair<int64_t, int64_t>;  // N, K

// 70 rows: a partial last panel; K = 544: 17 blocks, so the panel stride is padded.
// 1000 / 1020 rows: the decode's panel streams with panels left over and with a partial last
// panel in the last stream (kernels/qgemm_vnni-inl.h).
const Shape kShapes[] = {{70, 544}, {48, 64}, {16, 2048}, {1000, 64}, {1020, 64}};

// y [m, n] with the packed weights equals the stored layout's bit for bit (quantized), or the
// scalar twin within float rounding and each row computed alone bit for bit (float).
void ExpectPackedMatches(const PackedTestMatrix& p, int64_t m, ThreadPool& pool) {
  const int64_t n = p.w.m.rows, k = p.w.m.cols;
  const std::vector<float> x = RandomFloats(m * k, static_cast<uint32_t>(m));
  std::vector<float> want(m * n), got(m * n, -1.0f), alone(n), row(k);
  MatMul(p.packed, x.data(), m, got.data(), pool);
  if (!IsFloat(p.w.m.dtype)) {
    MatMul(p.w.m, x.data(), m, want.data(), pool);
    for (int64_t i = 0; i < m * n; ++i) ASSERT_EQ(got[i], want[i]) << i;
    return;
  }
  scalar::MatMul(p.w.m, x.data(), m, want.data(), pool);
  for (int64_t r = 0; r < m; ++r) {
    MatMul(p.packed, &x[r * k], 1, alone.data(), pool);
    for (int64_t j = 0; j < n; ++j) {
      ASSERT_EQ(got[r * n + j], alone[j]) << "y[" << r << ", " << j << "] vs its row alone";
      scalar::DequantizeRow(p.w.m, j, row.data());
      double l1 = 0.0;
      for (int64_t i = 0; i < k; ++i) l1 += std::fabs(x[r * k + i] * row[i]);
      ASSERT_TRUE(Near(got[r * n + j], want[r * n + j], 1e-5, 2e-6 * l1))
          << "y[" << r << ", " << j << "]";
    }
  }
}

TEST(PackedMatMul, MatchesStoredLayoutForEveryM) {
  ThreadPool pool1({}, /*pin=*/false), pool2({0, 1}, /*pin=*/false);
  ForEachTarget([&] {
    for (DType dtype : testing::AllMatMulTypes()) {
      for (const auto& [n, k] : kShapes) {
        const PackedTestMatrix p(dtype, n, k, static_cast<uint32_t>(n + k));
        ASSERT_EQ(p.packed.packed != nullptr, TargetPacks(dtype)) << GetDTypeInfo(dtype).name;
        if (p.packed.packed == nullptr) continue;
        for (int64_t m : {1, 2, 3, 4, 5, 8, 13, 40}) {
          for (ThreadPool* pool : {&pool1, &pool2}) {
            SCOPED_TRACE(std::string(GetDTypeInfo(dtype).name) + " N=" + std::to_string(n) +
                         " K=" + std::to_string(k) + " m=" + std::to_string(m) +
                         " threads=" + std::to_string(pool->size()));
            ExpectPackedMatches(p, m, *pool);
          }
        }
      }
    }
  });
}

// GEMM row counts in and around tiles of 16 rows: on CPUs with AMX-INT8 whole groups of 16
// rows of the quantized panels run on the AMX tiles, the rest on the VNNI register tiles, and
// with AMX-BF16 every M of the bf16 panels runs on the tiles, 32 rows at a time (53: a partial
// second tile). Every row must get the bits of the same row computed alone (the decode tile),
// and of the stored layout (quantized) or the scalar twin within float rounding (float).
TEST(PackedMatMul, GemmRowsMatchRowsAlone) {
  ThreadPool pool2({0, 1}, /*pin=*/false);
  ForEachTarget([&] {
    for (DType dtype : testing::AllMatMulTypes()) {
      if (!TargetPacks(dtype)) continue;
      for (const auto& [n, k] : kShapes) {
        const PackedTestMatrix p(dtype, n, k, static_cast<uint32_t>(n * k));
        if (p.packed.packed == nullptr) continue;
        for (int64_t m : {16, 37, 53, 64}) {
          SCOPED_TRACE(std::string(GetDTypeInfo(dtype).name) + " N=" + std::to_string(n) +
                       " K=" + std::to_string(k) + " m=" + std::to_string(m));
          ExpectPackedMatches(p, m, pool2);
          const std::vector<float> x = RandomFloats(m * k, static_cast<uint32_t>(m));
          std::vector<float> all(m * n), one(n);
          MatMul(p.packed, x.data(), m, all.data(), pool2);
          for (int64_t r = 0; r < m; ++r) {
            MatMul(p.packed, &x[r * k], 1, one.data(), pool2);
            for (int64_t j = 0; j < n; ++j) ASSERT_EQ(all[r * n + j], one[j]) << r << ", " << j;
          }
        }
      }
    }
  });
}

// Float panels hold K in steps (bf16: pairs); odd and tiny K leave a half-filled last step.
TEST(PackedMatMul, FloatPanelsWithOddK) {
  ThreadPool pool2({0, 1}, /*pin=*/false);
  ForEachTarget([&] {
    for (DType dtype : {DType::kF32, DType::kF16, DType::kBF16}) {
      for (int64_t k : {1, 7, 33, 100}) {
        const PackedTestMatrix p(dtype, 37, k, static_cast<uint32_t>(k));
        if (p.packed.packed == nullptr) continue;
        for (int64_t m : {1, 6}) {
          SCOPED_TRACE(std::string(GetDTypeInfo(dtype).name) + " K=" + std::to_string(k) +
                       " m=" + std::to_string(m));
          ExpectPackedMatches(p, m, pool2);
        }
      }
    }
  });
}

TEST(PackedMatMul, MultiWithPackedAndStoredWeights) {
  ThreadPool pool({0, 1}, /*pin=*/false);
  ForEachTarget([&] {
    const PackedTestMatrix a(DType::kQ8_0, 48, 256, 1), b(DType::kQ4_1, 32, 256, 2);
    const int64_t m = 3;
    const std::vector<float> x = RandomFloats(m * 256, 3);
    std::vector<float> ya(m * 48), yb(m * 32), want_a(m * 48), want_b(m * 32);
    const MatMulOutput outs[] = {{&a.packed, ya.data()}, {&b.w.m, yb.data()}};
    MatMulMulti(outs, x.data(), m, pool);
    MatMul(a.w.m, x.data(), m, want_a.data(), pool);
    MatMul(b.w.m, x.data(), m, want_b.data(), pool);
    EXPECT_EQ(ya, want_a);
    EXPECT_EQ(yb, want_b);
  });
}

TEST(PackedMatMul, SizeIsWholePanelsOfTheStoredRows) {
  ForEachTarget([&] {
    const TestMatrix w(DType::kQ4_0, 70, 544, 5);  // rows of 306 bytes
    const uint64_t bytes = PackedMatrixBytes(w.m);
    if (bytes == 0) return;
    // AVX3_DL: 5 panels of 16 rows; AVX2: 9 panels of 8 rows.
    const uint64_t rows = std::string(ActiveTargetName()) == "AVX2" ? 8 : 16;
    EXPECT_EQ(bytes, (70 + rows - 1) / rows * ((rows * 306u + 63u) / 64u * 64u));
  });
}

// MatMulMulti hands each worker one range of the concatenated rows: with 19 rows in the first
// matrix, the second one's ranges start inside a panel.
TEST(PackedMatMul, MultiRangesStartingInsideAPanel) {
  ThreadPool pool({0, 1}, /*pin=*/false);
  ForEachTarget([&] {
    for (DType dtype : {DType::kBF16, DType::kF16, DType::kQ8_0, DType::kQ4_0, DType::kQ4_1}) {
      const PackedTestMatrix a(dtype, 19, 64, 1), b(dtype, 45, 64, 2);
      for (int64_t m : {1, 5}) {
        const std::vector<float> x = RandomFloats(m * 64, 3);
        std::vector<float> ya(m * 19), yb(m * 45), want_a(m * 19), want_b(m * 45);
        const MatMulOutput outs[] = {{&a.packed, ya.data()}, {&b.packed, yb.data()}};
        MatMulMulti(outs, x.data(), m, pool);
        MatMul(a.packed, x.data(), m, want_a.data(), pool);
        MatMul(b.packed, x.data(), m, want_b.data(), pool);
        EXPECT_EQ(ya, want_a) << GetDTypeInfo(dtype).name;
        EXPECT_EQ(yb, want_b) << GetDTypeInfo(dtype).name;
      }
    }
  });
}

TEST(PackedMatMul, FloatSizeIsWholePanelsOfSteps) {
  ForEachTarget([&] {
    const TestMatrix w(DType::kBF16, 70, 101, 5);  // 51 steps of bf16 pairs
    const uint64_t bytes = PackedMatrixBytes(w.m);
    if (bytes == 0) return;
    const uint64_t lanes = std::string(ActiveTargetName()) == "AVX2" ? 8 : 16;
    const uint64_t panels = (70 + lanes - 1) / lanes;
    EXPECT_EQ(bytes, panels * ((51 * lanes * 4 + 63) / 64 * 64));
  });
}

TEST(PackedMatMul, UnpackableWeightsAreRejected) {
  ForEachTarget([&] {
    // q5_K has row kernels only, which read the stored layout (the other K-quant and q5 panels:
    // kquant_test.cc).
    const uint64_t row_bytes = *BytesForElements(DType::kQ5_K, 256);
    std::vector<uint8_t> bytes(16 * row_bytes), dst(64 * 1024);
    const Matrix w{DType::kQ5_K, 16, 256, bytes.data(), row_bytes};
    EXPECT_EQ(PackedMatrixBytes(w), 0u);
    EXPECT_THROW(PackMatrix(w, dst.data()), Error);
  });
}

}  // namespace
}  // namespace kiln::kernels
