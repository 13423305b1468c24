// Weights packed at load (PackMatrix, Matrix::packed) give bit-identical MatMul results to the
// stored layout, for every M (decode tiles and GEMM), partial last panels and odd block counts.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "kernel_test_util.h"
#include "kernels/ops.h"
#include "util/error.h"
#include "util/huge_buffer.h"
#include "util/thread_pool.h"

namespace kiln::kernels {
namespace {

using testing::ForEachTarget;
using testing::RandomFloats;
using testing::TestMatrix;

// Whether the active target packs `dtype`: AVX3_DL (AVX-512 VNNI) packs the quantized types
// into panels; float weights and the other targets read the stored layout. (Float rows
// interleaved into one stream measured slower than 4 row streams: one stream gets less
// memory-level parallelism from the hardware prefetchers.)
bool TargetPacks(DType dtype) {
  return (dtype == DType::kQ8_0 || dtype == DType::kQ4_0 || dtype == DType::kQ4_1) &&
         std::string(ActiveTargetName()) == "AVX3_DL";
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
const Shape kShapes[] = {{70, 544}, {48, 64}, {16, 2048}};

TEST(PackedMatMul, EqualsStoredLayoutBitwise) {
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
            const std::vector<float> x = RandomFloats(m * k, static_cast<uint32_t>(m));
            std::vector<float> want(m * n), got(m * n, -1.0f);
            MatMul(p.w.m, x.data(), m, want.data(), *pool);
            MatMul(p.packed, x.data(), m, got.data(), *pool);
            for (int64_t i = 0; i < m * n; ++i) ASSERT_EQ(got[i], want[i]) << i;
          }
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
    const TestMatrix w(DType::kQ4_0, 70, 544, 5);  // 5 panels of 16 rows x 306 bytes
    const uint64_t bytes = PackedMatrixBytes(w.m);
    if (bytes == 0) return;
    EXPECT_EQ(bytes, 5u * ((16u * 306u + 63u) / 64u * 64u));
  });
}

TEST(PackedMatMul, UnpackableWeightsAreRejected) {
  ForEachTarget([&] {
    for (DType dtype : {DType::kF32, DType::kF16, DType::kBF16}) {
      const TestMatrix w(dtype, 16, 64, 7);
      EXPECT_EQ(PackedMatrixBytes(w.m), 0u);
    }
    // K-quants have kernels of their own, which read the stored layout.
    const uint64_t row_bytes = *BytesForElements(DType::kQ4_K, 256);
    std::vector<uint8_t> bytes(16 * row_bytes), dst(64 * 1024);
    const Matrix w{DType::kQ4_K, 16, 256, bytes.data(), row_bytes};
    EXPECT_EQ(PackedMatrixBytes(w), 0u);
    EXPECT_THROW(PackMatrix(w, dst.data()), Error);
  });
}

}  // namespace
}  // namespace kiln::kernels
