#include "kernels/quantize.h"

#include <algorithm>
#include <cstring>
#include <iterator>
#include <limits>
#include <string>
#include <vector>

#include "kernel_test_util.h"
#include "kernels/ops.h"
#include "kernels/scalar_ops.h"
#include "util/half.h"

namespace kiln::kernels {
namespace {

using testing::AllMatMulTypes;
using testing::ForEachTarget;
using testing::RandomFloats;
using testing::TestMatrix;

float HalfAt(const std::vector<uint8_t>& b, int offset) {
  uint16_t h;
  std::memcpy(&h, &b[offset], 2);
  return F16ToF32(h);
}

TEST(QuantizeRow, Q8_0MatchesGgmlReference) {
  std::vector<float> x(32);
  for (int j = 0; j < 32; ++j) x[j] = static_cast<float>(j - 16) / 8.0f;  // amax 2 at j = 0
  std::vector<uint8_t> b(34);
  QuantizeRow(DType::kQ8_0, x.data(), 32, b.data());
  EXPECT_EQ(HalfAt(b, 0), 0.0157470703125f);  // f16(2 / 127)
  // q = roundf(x * 63.5): -127 at j = 0, 0 at 16, round(8 * 7.9375 = 63.5) = 64 (half away).
  EXPECT_EQ(static_cast<int8_t>(b[2 + 0]), -127);
  EXPECT_EQ(static_cast<int8_t>(b[2 + 16]), 0);
  EXPECT_EQ(static_cast<int8_t>(b[2 + 24]), 64);
  EXPECT_EQ(static_cast<int8_t>(b[2 + 8]), -64);
  EXPECT_EQ(static_cast<int8_t>(b[2 + 31]), 119);  // 15 * 7.9375 = 119.06
}

TEST(QuantizeRow, Q4_0MatchesGgmlReference) {
  std::vector<float> x(32);
  for (int j = 0; j < 32; ++j) x[j] = static_cast<float>(j - 16);  // max |x| = 16 at x = -16
  std::vector<uint8_t> b(18);
  QuantizeRow(DType::kQ4_0, x.data(), 32, b.data());
  EXPECT_EQ(HalfAt(b, 0), 2.0f);  // d = -16 / -8
  // q = min(15, trunc(x / 2 + 8.5)); element j in the low nibble, j + 16 in the high one.
  EXPECT_EQ(b[2 + 0] & 0x0F, 0);  // x = -16
  EXPECT_EQ(b[2 + 1] & 0x0F, 1);  // x = -15: trunc(1.0)
  EXPECT_EQ(b[2 + 2] & 0x0F, 1);  // x = -14: trunc(1.5)
  EXPECT_EQ(b[2 + 0] >> 4, 8);    // x = 0
  EXPECT_EQ(b[2 + 15] >> 4, 15);  // x = 15: min(15, 16)
  std::vector<float> back(32);
  DequantizeRow(Matrix{DType::kQ4_0, 1, 32, b.data(), 18}, 0, back.data());
  EXPECT_EQ(back[0], -16.0f);
  EXPECT_EQ(back[2], -14.0f);
  EXPECT_EQ(back[31], 14.0f);
}

TEST(QuantizeRow, Q4_1MatchesGgmlReference) {
  std::vector<float> x(32);
  for (int j = 0; j < 32; ++j) x[j] = 0.5f * static_cast<float>(j) - 1.0f;  // [-1, 14.5]
  std::vector<uint8_t> b(20);
  QuantizeRow(DType::kQ4_1, x.data(), 32, b.data());
  EXPECT_EQ(HalfAt(b, 0), 1.033203125f);  // f16(15.5 / 15)
  EXPECT_EQ(HalfAt(b, 2), -1.0f);
  // q = min(15, trunc((x + 1) / d + 0.5)) with 1 / d from the unrounded d = 15.5 / 15.
  EXPECT_EQ(b[4 + 0] & 0x0F, 0);
  EXPECT_EQ(b[4 + 15] >> 4, 15);  // x = 14.5
  EXPECT_EQ(b[4 + 3] & 0x0F, 1);  // (0.5 + 1) * 15 / 15.5 = 1.45 -> 1
  EXPECT_EQ(b[4 + 4] & 0x0F, 2);  // 2 * 15 / 15.5 = 1.94 -> 2
  std::vector<float> back(32);
  DequantizeRow(Matrix{DType::kQ4_1, 1, 32, b.data(), 20}, 0, back.data());
  for (int j = 0; j < 32; ++j) EXPECT_NEAR(back[j], x[j], 1.033203125 / 2 + 1e-6) << j;
}

TEST(QuantizeRow, HalfTypesRoundToNearestEven) {
  const float x[] = {1.0f + 1.0f / 256, 1.0f + 3.0f / 256, 1.0f + 1.0f / 2048, -2.5f};
  uint16_t bf[4], f16[4];
  QuantizeRow(DType::kBF16, x, 4, reinterpret_cast<uint8_t*>(bf));
  QuantizeRow(DType::kF16, x, 4, reinterpret_cast<uint8_t*>(f16));
  EXPECT_EQ(bf[0], 0x3F80);  // tie -> 1.0 (even)
  EXPECT_EQ(bf[1], 0x3F82);  // tie -> 1.015625 (even)
  EXPECT_EQ(bf[3], 0xC020);
  EXPECT_EQ(f16[2], 0x3C00);  // tie -> 1.0
  EXPECT_EQ(f16[3], 0xC100);
}

// f16 / bf16 rows (the KV cache's writes) have the scalar conversions' bits on every target:
// ties, overflow to inf, subnormals, signed zero and NaN, in the vector body and the tail.
TEST(QuantizeRow, HalfTypesMatchScalarOnEveryTarget) {
  std::vector<float> x = RandomFloats(77, 3, -70000.0f, 70000.0f);
  const float specials[] = {1.0f + 1.0f / 2048,
                            65504.0f,
                            65520.0f,
                            -65520.0f,
                            1e-6f,
                            1e-8f,
                            -0.0f,
                            std::numeric_limits<float>::infinity(),
                            std::numeric_limits<float>::quiet_NaN(),
                            1.0f + 1.0f / 256,
                            3e38f};
  std::copy(std::begin(specials), std::end(specials), x.begin());
  std::copy(std::begin(specials), std::end(specials), x.end() - std::size(specials));
  ForEachTarget([&] {
    for (DType dtype : {DType::kF16, DType::kBF16}) {
      std::vector<uint8_t> want(2 * x.size()), got(2 * x.size());
      scalar::QuantizeRow(dtype, x.data(), static_cast<int64_t>(x.size()), want.data());
      QuantizeRow(dtype, x.data(), static_cast<int64_t>(x.size()), got.data());
      for (size_t i = 0; i < want.size(); ++i) {
        ASSERT_EQ(got[i], want[i]) << GetDTypeInfo(dtype).name << " byte " << i;
      }
    }
  });
}

TEST(DequantizeRow, MatchesScalarOnEveryTarget) {
  ForEachTarget([] {
    for (DType dtype : AllMatMulTypes()) {
      const bool quantized = GetDTypeInfo(dtype).block_elems > 1;
      for (int64_t cols : {32, 96, 37, 1}) {
        if (quantized && cols % 32 != 0) continue;
        const TestMatrix w(dtype, 3, cols, 7);
        std::vector<float> want(cols), got(cols);
        for (int64_t row = 0; row < 3; ++row) {
          scalar::DequantizeRow(w.m, row, want.data());
          DequantizeRow(w.m, row, got.data());
          for (int64_t i = 0; i < cols; ++i) {
            ASSERT_EQ(got[i], want[i]) << GetDTypeInfo(dtype).name << " row " << row << " i " << i;
          }
        }
      }
    }
  });
}

void ExpectActsEqual(const ActsView& a, const ActsView& b, int64_t rows) {
  for (int64_t i = 0; i < rows * a.k; ++i) ASSERT_EQ(a.qs[i], b.qs[i]) << i;
  for (int64_t i = 0; i < rows * a.blocks(); ++i) {
    ASSERT_EQ(a.sums[i], b.sums[i]) << i;
    ASSERT_EQ(a.ds[2 * i], b.ds[2 * i]) << i;
    ASSERT_EQ(a.ds[2 * i + 1], b.ds[2 * i + 1]) << i;
  }
}

TEST(QuantizeActs, ScalarRoundsHalfToEvenLikeGgmlX86) {
  std::vector<float> x(32, 0.0f);
  x[0] = 127.0f;  // amax 127: id = 1, so x * id is x itself
  x[1] = 0.5f;
  x[2] = 1.5f;
  x[3] = 2.5f;
  x[4] = -2.5f;
  x[5] = -0.4f;
  ActsBuffer buffer;
  const ActsView a = buffer.Get(1, 32);
  scalar::QuantizeActs(x.data(), 1, a);
  EXPECT_EQ(a.qs[0], 127);
  EXPECT_EQ(a.qs[1], 0);
  EXPECT_EQ(a.qs[2], 2);
  EXPECT_EQ(a.qs[3], 2);
  EXPECT_EQ(a.qs[4], -2);
  EXPECT_EQ(a.qs[5], 0);
  EXPECT_EQ(a.sums[0], 129);   // 127 + 0 + 2 + 2 - 2 + 0
  EXPECT_EQ(a.ds[0], 1.0f);    // f16(127 / 127)
  EXPECT_EQ(a.ds[1], 129.0f);  // f16(1 * 129)
}

TEST(QuantizeActs, MatchesScalarOnEveryTarget) {
  const int64_t rows = 3, k = 32 * 9;
  std::vector<float> x = RandomFloats(rows * k, 5, -3.0f, 3.0f);
  for (int j = 0; j < 32; ++j) x[32 + j] = 0.0f;  // an all-zero block: d = 0
  for (int j = 0; j < 32; ++j) x[64 + j] = static_cast<float>(j - 16) * 0.5f;  // ties
  x[64] = 127.0f;
  ActsBuffer want_buffer, got_buffer;
  const ActsView want = want_buffer.Get(rows, k);
  scalar::QuantizeActs(x.data(), rows, want);
  ForEachTarget([&] {
    const ActsView got = got_buffer.Get(rows, k);
    QuantizeActs(x.data(), rows, got);
    ExpectActsEqual(got, want, rows);
  });
}

}  // namespace
}  // namespace kiln::kernels
