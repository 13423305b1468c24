#include "model/read_ahead.h"

#include <gtest/gtest.h>

#include <vector>

namespace kiln {
namespace {

// A matrix of `rows` stored q8_0 rows of 64 elements (68 bytes each) at `data`.
kernels::Matrix Q8Matrix(const uint8_t* data, int64_t rows) {
  kernels::Matrix m;
  m.dtype = DType::kQ8_0;
  m.rows = rows;
  m.cols = 64;
  m.row_bytes = 68;
  m.data = data;
  return m;
}

TEST(ReadAheadPlan, EachSectionPointsAtTheNextOneAndTheHeadAtLayerZero) {
  std::vector<uint8_t> file(1 << 16);
  const uint8_t* p = file.data();
  ModelWeights w;
  w.layers.resize(2);
  for (int l = 0; l < 2; ++l) {
    LayerWeights& lw = w.layers[l];
    const uint8_t* base = p + l * 8192;
    lw.wq = Q8Matrix(base, 4);
    lw.wk = Q8Matrix(base + 1000, 2);  // not adjacent to wq: Q/K/V reads ahead wq only
    lw.wv = Q8Matrix(base + 2000, 2);
    lw.wo = Q8Matrix(base + 3000, 4);
    lw.w_gate = Q8Matrix(base + 4000, 3);
    lw.w_up = Q8Matrix(base + 4000 + 256, 3);  // 3 * 68 = 204 bytes, aligned up to 256: merged
    lw.w_down = Q8Matrix(base + 5000, 4);
  }
  w.lm_head = Q8Matrix(p + 20000, 10);
  const ReadAheadPlan plan(w);
  using P = ReadAheadPlan;
  EXPECT_EQ(plan.After(0, P::kQkv).begin, p + 3000);
  EXPECT_EQ(plan.After(0, P::kQkv).bytes, 4u * 68);
  EXPECT_EQ(plan.After(0, P::kO).begin, p + 4000);
  EXPECT_EQ(plan.After(0, P::kO).bytes, 256u + 3 * 68);
  EXPECT_EQ(plan.After(0, P::kGateUp).begin, p + 5000);
  EXPECT_EQ(plan.After(0, P::kDown).begin, p + 8192);
  EXPECT_EQ(plan.After(0, P::kDown).bytes, 4u * 68);
  EXPECT_EQ(plan.After(1, P::kDown).begin, p + 20000);
  EXPECT_EQ(plan.After(1, P::kDown).bytes, 10u * 68);
  EXPECT_EQ(plan.After(2, P::kQkv).begin, p);  // after the LM head: the next step's Q/K/V
  EXPECT_EQ(ReadAheadPlan().After(0, P::kQkv).bytes, 0u);
}

TEST(ReadAheadPlan, PackedMatricesAreStreamedFromTheirCopy) {
  std::vector<uint8_t> stored(16 * 128), copy(8192);
  kernels::Matrix m{DType::kBF16, 16, 64, stored.data(), 128, nullptr};
  EXPECT_EQ(StreamedBytes(m).begin, stored.data());
  EXPECT_EQ(StreamedBytes(m).bytes, 16u * 128);
  if (kernels::PackedMatrixBytes(m) == 0) GTEST_SKIP() << "bf16 is not packed on this CPU";
  m.packed = copy.data();
  EXPECT_EQ(StreamedBytes(m).begin, copy.data());
  EXPECT_EQ(StreamedBytes(m).bytes, kernels::PackedMatrixBytes(m));
}

}  // namespace
}  // namespace kiln
