// K-quant kernels (q4_K, q5_K, q6_K, and the fallbacks q5_0, q5_1): SIMD against the scalar twins
// on every target, the scalar twins against independent references, and dequantization of real
// blocks (quantized by llama.cpp) against the gguf Python package's dequantize
// (tests/data/kernels).
#include "kernels/kquant.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <limits>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "kernel_test_util.h"
#include "kernels/ops.h"
#include "util/dtype.h"
#include "util/error.h"
#include "util/half.h"
#include "util/huge_buffer.h"
#include "util/thread_pool.h"

namespace kiln::kernels {
namespace {

using testing::ForEachTarget;
using testing::Near;
using testing::RandomFloats;

const DType kKTypes[] = {DType::kQ4_K, DType::kQ5_K, DType::kQ6_K};
// Everything kquant.cc serves: the K-quants and their fallbacks q5_0 / q5_1.
const DType kAllTypes[] = {DType::kQ4_K, DType::kQ5_K, DType::kQ6_K, DType::kQ5_0, DType::kQ5_1};

// Random but valid K-quant rows: random quant, scale and high bytes; f16 super-block scales
// in a realistic range (every byte pattern of the other fields is a valid block).
struct KMatrix {
  std::vector<uint8_t> bytes;
  Matrix m;

  KMatrix(DType t, int64_t rows, int64_t cols, uint32_t seed) {
    const uint64_t row_bytes = *BytesForElements(t, cols);
    bytes.resize(row_bytes * rows);
    std::mt19937 rng(seed);
    for (uint8_t& b : bytes) b = static_cast<uint8_t>(rng());
    std::uniform_real_distribution<float> scale(1e-4f, 2e-2f);
    const int bb = GetDTypeInfo(t).block_bytes;
    for (uint64_t off = 0; off < bytes.size(); off += bb) {
      const uint16_t d = F32ToF16(scale(rng)), dmin = F32ToF16(scale(rng));
      if (t == DType::kQ6_K) {
        std::memcpy(&bytes[off + offsetof(BlockQ6_K, d)], &d, 2);
      } else {
        std::memcpy(&bytes[off], &d, 2);
        if (t != DType::kQ5_0) std::memcpy(&bytes[off + 2], &dmin, 2);  // dmin or m
      }
    }
    m = Matrix{t, rows, cols, bytes.data(), row_bytes};
  }
};

std::string Name(DType t) { return std::string(GetDTypeInfo(t).name); }

TEST(KQuant, DequantizeMatchesScalarBitForBitOnEveryTarget) {
  ForEachTarget([&] {
    for (DType t : kAllTypes) {
      SCOPED_TRACE(Name(t));
      const KMatrix w(t, 3, 768, 7);
      std::vector<float> want(768), got(768);
      for (int64_t r = 0; r < 3; ++r) {
        scalar::KQuantDequantize(t, w.m.data + r * w.m.row_bytes, 768, want.data());
        DequantizeRow(w.m, r, got.data());
        ASSERT_EQ(0, std::memcmp(want.data(), got.data(), want.size() * 4)) << "row " << r;
        scalar::DequantizeRow(w.m, r, got.data());
        ASSERT_EQ(0, std::memcmp(want.data(), got.data(), want.size() * 4)) << "row " << r;
      }
    }
  });
}

// The q8_K quantizer of llama.cpp's quantize_row_q8_K_ref, on hand-made blocks.
TEST(KQuant, QuantizeActsQ8KFollowsGgml) {
  std::vector<float> x(512, 0.0f);
  // Block 0: the first element of largest magnitude is negative, so iscale = -127 / max > 0.
  x[3] = -2.0f;
  x[10] = 2.0f;                         // same magnitude, later: not the max
  x[20] = 1.0f / 127.0f * 2.0f * 2.5f;  // iscale * x = 2.5: rounds half to even -> 2
  x[21] = 1.0f;
  // Block 1 stays all zero.
  KActsBuffer buffer;
  const KActsView acts = buffer.Get(1, 512);
  QuantizeActsQ8K(x.data(), 1, acts);
  const BlockQ8_K& b0 = acts.blocks[0];
  const float iscale = -127.0f / -2.0f;
  EXPECT_EQ(b0.d, 1.0f / iscale);
  EXPECT_EQ(b0.qs[3], -127);
  EXPECT_EQ(b0.qs[10], 127);
  EXPECT_EQ(b0.qs[20], static_cast<int8_t>(std::nearbyint(iscale * x[20])));
  EXPECT_EQ(b0.qs[21], 64);  // 63.5 -> 64 (even)
  EXPECT_EQ(b0.bsums[0], -127 + 127);
  EXPECT_EQ(b0.bsums[1], b0.qs[20] + 64);
  for (int g = 2; g < 16; ++g) EXPECT_EQ(b0.bsums[g], 0);
  const BlockQ8_K& b1 = acts.blocks[1];
  EXPECT_EQ(b1.d, 0.0f);
  for (int j = 0; j < 256; ++j) ASSERT_EQ(b1.qs[j], 0);
  for (int g = 0; g < 16; ++g) ASSERT_EQ(b1.bsums[g], 0);

  // Positive max: iscale < 0, so d < 0 and the quants flip sign.
  const std::vector<float> y = RandomFloats(256, 5, -1.0f, 3.0f);
  const KActsView one = buffer.Get(1, 256);
  QuantizeActsQ8K(y.data(), 1, one);
  float max = 0.0f;
  for (float v : y) max = std::fabs(v) > std::fabs(max) ? v : max;
  const float is = -127.0f / max;
  EXPECT_EQ(one.blocks[0].d, 1.0f / is);
  for (int j = 0; j < 256; ++j) {
    ASSERT_EQ(one.blocks[0].qs[j], static_cast<int8_t>(std::nearbyint(is * y[j])));
  }
}

// q5_0 / q5_1: the same with the q8_0 / q8_1 activations (q5_1's min term uses s = f16(d sum q)).
TEST(KQuant, ScalarQ5DotMatchesDequantizedDot) {
  for (DType t : {DType::kQ5_0, DType::kQ5_1}) {
    SCOPED_TRACE(Name(t));
    const int64_t k = 256;
    const KMatrix w(t, 4, k, 13);
    const std::vector<float> x = RandomFloats(k, 14, -2.0f, 2.0f);
    ActsBuffer buffer;
    const ActsView acts = buffer.Get(1, k);
    scalar::QuantizeActs(x.data(), 1, acts);
    std::vector<float> row(k);
    for (int64_t n = 0; n < 4; ++n) {
      const uint8_t* w_row = w.m.data + n * w.m.row_bytes;
      scalar::KQuantDequantize(t, w_row, k, row.data());
      double want = 0.0, l1 = 0.0;
      for (int64_t b = 0; b < k / 32; ++b) {
        // q d_w + m_w against q8 d_x: the m_w part is m_w * s_x with the stored s_x.
        uint16_t m_bits = 0;
        if (t == DType::kQ5_1) std::memcpy(&m_bits, w_row + b * 24 + 2, 2);
        const double m = F16ToF32(m_bits);
        for (int64_t j = 32 * b; j < 32 * b + 32; ++j) {
          const double xv = static_cast<double>(acts.ds[2 * b]) * acts.qs[j];
          want += (row[j] - m) * xv;
          l1 += std::fabs(row[j] * xv);
        }
        want += m * acts.ds[2 * b + 1];
      }
      const float got = scalar::Q5DotRow(t, w_row, acts, 0);
      EXPECT_TRUE(Near(got, static_cast<float>(want), 0.0, 1e-5 * l1)) << "row " << n;
    }
  }
}

// The scalar dot against a double-precision dot of the dequantized weights with the
// dequantized q8_K activations: checks the integer formulas (mins, bsums, the -32 of q6_K).
TEST(KQuant, ScalarDotMatchesDequantizedDot) {
  for (DType t : kKTypes) {
    SCOPED_TRACE(Name(t));
    const int64_t k = 1024;
    const KMatrix w(t, 4, k, 11);
    const std::vector<float> x = RandomFloats(k, 12, -2.0f, 2.0f);
    KActsBuffer buffer;
    const KActsView acts = buffer.Get(1, k);
    QuantizeActsQ8K(x.data(), 1, acts);
    std::vector<float> row(k);
    for (int64_t n = 0; n < 4; ++n) {
      scalar::KQuantDequantize(t, w.m.data + n * w.m.row_bytes, k, row.data());
      double want = 0.0, l1 = 0.0;
      for (int64_t i = 0; i < k; ++i) {
        const BlockQ8_K& b = acts.blocks[i / 256];
        const double xv = static_cast<double>(b.d) * b.qs[i % 256];
        want += row[i] * xv;
        l1 += std::fabs(row[i] * xv);
      }
      const float got = scalar::KQuantDotRow(t, w.m.data + n * w.m.row_bytes, acts, 0);
      EXPECT_TRUE(Near(got, static_cast<float>(want), 0.0, 1e-5 * l1)) << "row " << n;
    }
  }
}

void ExpectMatMulMatchesScalar(DType t, int64_t n, int64_t k, int64_t m, ThreadPool& pool) {
  SCOPED_TRACE(Name(t) + " N=" + std::to_string(n) + " K=" + std::to_string(k) +
               " m=" + std::to_string(m) + " threads=" + std::to_string(pool.size()));
  const KMatrix w(t, n, k, 100 + static_cast<uint32_t>(n * 7 + k));
  const std::vector<float> x = RandomFloats(m * k, 200 + static_cast<uint32_t>(m));
  std::vector<float> want(m * n), got(m * n, -1.0f), row(k);
  scalar::KQuantMatMul(w.m, x.data(), m, want.data());
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

TEST(KQuant, MatMulMatchesScalarOnEveryTarget) {
  ThreadPool pool1({}, /*pin=*/false);
  ThreadPool pool2({0, 1}, /*pin=*/false);
  const std::vector<std::pair<int64_t, int64_t>> shapes = {
      {1, 256}, {5, 512}, {17, 768}, {33, 2304}};
  ForEachTarget([&] {
    for (DType t : kAllTypes) {
      for (auto [n, k] : shapes) {
        for (int64_t m : {1, 2, 3, 4, 5, 17}) {
          for (ThreadPool* pool : {&pool1, &pool2}) ExpectMatMulMatchesScalar(t, n, k, m, *pool);
        }
      }
    }
  });
}

// The SIMD q8_K quantizer gives the scalar twin's blocks bit for bit on every target: random
// rows, rows whose products land on .5 (ties to even), equal magnitudes of both signs, zero,
// tiny (subnormal) and non-finite blocks.
TEST(KQuant, QuantizeActsQ8KMatchesScalarOnEveryTarget) {
  constexpr int kBlocks = 8;
  std::vector<float> x = RandomFloats(kBlocks * 256, 9, -3.0f, 3.0f);
  for (int j = 0; j < 256; ++j) x[256 + j] = static_cast<float>(j % 255 - 127) / 2.0f;
  x[512 + 5] = -4.0f;
  x[512 + 9] = 4.0f;
  std::fill(x.begin() + 768, x.begin() + 1024, 0.0f);
  for (int j = 0; j < 256; ++j) x[1024 + j] = static_cast<float>(j) * 1e-30f;
  x[1280 + 3] = std::numeric_limits<float>::infinity();
  x[1536 + 7] = std::numeric_limits<float>::quiet_NaN();
  x[1536 + 23] = 9.0f;  // the largest magnitude, after the NaN in its SIMD lane
  KActsBuffer want_buffer, got_buffer;
  const KActsView want = want_buffer.Get(1, kBlocks * 256);
  scalar::QuantizeActsQ8K(x.data(), 1, want);
  ForEachTarget([&] {
    const KActsView got = got_buffer.Get(1, kBlocks * 256);
    QuantizeActsQ8K(x.data(), 1, got);
    for (int b = 0; b < kBlocks; ++b) {
      SCOPED_TRACE("block " + std::to_string(b));
      const BlockQ8_K &w = want.blocks[b], &g = got.blocks[b];
      EXPECT_EQ(0, std::memcmp(&w.d, &g.d, sizeof(float)));
      EXPECT_EQ(0, std::memcmp(w.qs, g.qs, sizeof(w.qs)));
      EXPECT_EQ(0, std::memcmp(w.bsums, g.bsums, sizeof(w.bsums)));
    }
  });
}

// MatMulMulti over K-quant weights (one quantization per activation type, one pass over the
// pool) gives each output MatMul's bits, with q8_K and q8_0 readers mixed.
TEST(KQuant, MatMulMultiMatchesMatMul) {
  ThreadPool pool({0, 1}, /*pin=*/false);
  ForEachTarget([&] {
    const KMatrix a(DType::kQ4_K, 24, 512, 1), b(DType::kQ6_K, 8, 512, 2),
        c(DType::kQ5_0, 40, 512, 3);
    for (int64_t m : {1, 3, 17}) {
      const std::vector<float> x = RandomFloats(m * 512, static_cast<uint32_t>(m));
      std::vector<float> ya(m * 24), yb(m * 8), yc(m * 40);
      const MatMulOutput outs[] = {{&a.m, ya.data()}, {&b.m, yb.data()}, {&c.m, yc.data()}};
      MatMulMulti(outs, x.data(), m, pool);
      for (const MatMulOutput& o : outs) {
        std::vector<float> want(m * o.w->rows);
        MatMul(*o.w, x.data(), m, want.data(), pool);
        for (size_t i = 0; i < want.size(); ++i) {
          ASSERT_EQ(o.y[i], want[i]) << Name(o.w->dtype) << " m=" << m << " " << i;
        }
      }
    }
  });
}

// q4_K / q6_K / q5_0 / q5_1 weights packed at load (the 8-row panels of kpanel_avx2-inl.h: all
// four on AVX2, q5_0 / q5_1 on AVX3_DL) give the stored layout's results bit for bit (the stored
// rows are packed per call into the same panels), and each x row's results do not depend on the
// rows batched with it. 70 rows: a partial last panel.
TEST(KQuant, PackedMatchesStoredLayoutBitForBit) {
  ThreadPool pool1({}, /*pin=*/false);
  ThreadPool pool2({0, 1}, /*pin=*/false);
  ForEachTarget([&] {
    for (DType t : {DType::kQ4_K, DType::kQ6_K, DType::kQ5_0, DType::kQ5_1}) {
      for (auto [n, k] : std::vector<std::pair<int64_t, int64_t>>{{70, 768}, {16, 2048}}) {
        const KMatrix w(t, n, k, 11);
        const uint64_t bytes = PackedMatrixBytes(w.m);
        const std::string target = ActiveTargetName();
        const bool q5 = t == DType::kQ5_0 || t == DType::kQ5_1;
        ASSERT_EQ(bytes > 0, target == "AVX2" || (target == "AVX3_DL" && q5));
        if (bytes == 0) continue;
        HugeBuffer buffer(bytes);
        PackMatrix(w.m, buffer.data());
        Matrix packed = w.m;
        packed.packed = buffer.data();
        for (int64_t m : {1, 2, 3, 4, 5, 13}) {
          for (ThreadPool* pool : {&pool1, &pool2}) {
            SCOPED_TRACE(Name(t) + " N=" + std::to_string(n) + " m=" + std::to_string(m));
            const std::vector<float> x = RandomFloats(m * k, static_cast<uint32_t>(m));
            std::vector<float> want(m * n), got(m * n, -1.0f), alone(n);
            MatMul(w.m, x.data(), m, want.data(), *pool);
            MatMul(packed, x.data(), m, got.data(), *pool);
            for (int64_t i = 0; i < m * n; ++i) ASSERT_EQ(got[i], want[i]) << i;
            for (int64_t r = 0; r < m; ++r) {
              MatMul(packed, &x[r * k], 1, alone.data(), *pool);
              for (int64_t j = 0; j < n; ++j) ASSERT_EQ(got[r * n + j], alone[j]) << r << ", " << j;
            }
          }
        }
      }
    }
  });
}

// scalar::MatMul (the twin of ops.h's MatMul) forwards K-quants to the K-quant twin.
TEST(KQuant, ScalarMatMulForwards) {
  ThreadPool pool({}, /*pin=*/false);
  const KMatrix w(DType::kQ6_K, 3, 512, 3);
  const std::vector<float> x = RandomFloats(2 * 512, 4);
  std::vector<float> a(6), b(6);
  scalar::MatMul(w.m, x.data(), 2, a.data(), pool);
  scalar::KQuantMatMul(w.m, x.data(), 2, b.data());
  EXPECT_EQ(a, b);
}

// Real blocks: tests/data/kernels/kquant_blocks.bin, made by
// tests/kernels/tools/make_kquant_golden.py from SmolLM2 quantized by llama.cpp, holds records
// {u32 ggml type, u32 n, n/256 blocks, f32[n] from gguf.quants.dequantize}.
TEST(KQuant, DequantizeMatchesGgufPythonOnRealBlocks) {
  const std::string path = std::string(KILN_TEST_DATA_DIR) + "/kernels/kquant_blocks.bin";
  std::ifstream in(path, std::ios::binary);
  ASSERT_TRUE(in) << "missing " << path;
  const std::vector<char> data((std::istreambuf_iterator<char>(in)),
                               std::istreambuf_iterator<char>());
  ASSERT_GE(data.size(), 4u);
  ASSERT_EQ(std::string(data.data(), 4), "KQGD");
  size_t pos = 4;
  int seen[5] = {0, 0, 0, 0, 0};
  while (pos < data.size()) {
    uint32_t ggml_type, n;
    ASSERT_LE(pos + 8, data.size());
    std::memcpy(&ggml_type, &data[pos], 4);
    std::memcpy(&n, &data[pos + 4], 4);
    pos += 8;
    const std::optional<DType> t = DTypeFromGgmlType(ggml_type);
    ASSERT_TRUE(t.has_value() && HasKQuantKernels(*t)) << ggml_type;
    const uint64_t nbytes = *BytesForElements(*t, n);
    ASSERT_LE(pos + nbytes + 4ull * n, data.size());
    const uint8_t* blocks = reinterpret_cast<const uint8_t*>(&data[pos]);
    std::vector<float> want(n), got(n);
    std::memcpy(want.data(), &data[pos + nbytes], 4ull * n);
    pos += nbytes + 4ull * n;
    seen[static_cast<int>(*t) - static_cast<int>(DType::kQ4_K)]++;
    SCOPED_TRACE(Name(*t));
    scalar::KQuantDequantize(*t, blocks, n, got.data());
    for (uint32_t i = 0; i < n; ++i) ASSERT_EQ(got[i], want[i]) << "scalar, element " << i;
    const Matrix w{*t, 1, static_cast<int64_t>(n), blocks, nbytes};
    SCOPED_TRACE(GetDTypeInfo(*t).name);
    ForEachTarget([&] {
      DequantizeRow(w, 0, got.data());
      for (uint32_t i = 0; i < n; ++i) ASSERT_EQ(got[i], want[i]) << "element " << i;
    });
  }
  for (int i = 0; i < 5; ++i) EXPECT_GT(seen[i], 0) << i;
}

TEST(KQuant, BadShapesThrow) {
  ThreadPool pool({}, /*pin=*/false);
  std::vector<uint8_t> bytes(210);
  const Matrix w{DType::kQ6_K, 1, 128, bytes.data(), bytes.size()};
  std::vector<float> x(256), y(1);
  EXPECT_THROW(MatMul(w, x.data(), 1, y.data(), pool), Error);
}

}  // namespace
}  // namespace kiln::kernels
