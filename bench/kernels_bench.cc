// MatMul throughput per weight dtype: decode (m = 1) as GB/s of weights streamed, prefill
// (m = 128) as GFLOP/s, with 1 and 2 pool threads; MatMul/batch: m = 1 .. 512 on one thread
// (CPU time, the figure that survives a shared machine). Small shapes stay in cache between
// iterations, so their GB/s measure the kernel rather than DRAM. Weights are packed as the
// model packs them at load (PackMatrix) where this CPU packs their dtype.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "kernels/ops.h"
#include "util/dtype.h"
#include "util/huge_buffer.h"
#include "util/thread_pool.h"

namespace kiln::kernels {
namespace {

const DType kTypes[] = {DType::kF32,  DType::kF16,  DType::kBF16,
                        DType::kQ8_0, DType::kQ4_0, DType::kQ4_1};

struct Setup {
  std::vector<uint8_t> weights;
  Matrix w;
  std::vector<float> x, y;
  HugeBuffer packed;

  Setup(DType dtype, int64_t n, int64_t k, int64_t m) : x(m * k), y(m * n) {
    std::mt19937 rng(42);
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    const uint64_t row_bytes = *BytesForElements(dtype, k);
    weights.resize(row_bytes * n);
    std::vector<float> row(k);
    for (int64_t r = 0; r < n; ++r) {
      for (float& v : row) v = dist(rng);
      QuantizeRow(dtype, row.data(), k, &weights[r * row_bytes]);
    }
    for (float& v : x) v = dist(rng);
    w = Matrix{dtype, n, k, weights.data(), row_bytes};
  }

  // The matrix as the model runs it: packed at load where this CPU packs its dtype.
  Matrix Packed() {
    const uint64_t bytes = PackedMatrixBytes(w);
    if (bytes == 0) return w;
    packed = HugeBuffer(bytes);
    PackMatrix(w, packed.data());
    Matrix p = w;
    p.packed = packed.data();
    return p;
  }
};

std::vector<int> Cores(int threads) {
  std::vector<int> cores;
  for (int i = 0; i < threads; ++i) cores.push_back(i);
  return cores;
}

// Args: dtype index, N, K, m, threads.
void BM_MatMul(benchmark::State& state) {
  const DType dtype = kTypes[state.range(0)];
  const int64_t n = state.range(1), k = state.range(2), m = state.range(3);
  ThreadPool pool(Cores(static_cast<int>(state.range(4))), /*pin=*/true);
  Setup s(dtype, n, k, m);
  const Matrix w = s.Packed();
  for (auto _ : state) {
    MatMul(w, s.x.data(), m, s.y.data(), pool);
    benchmark::DoNotOptimize(s.y.data());
  }
  const double iters = static_cast<double>(state.iterations());
  const double weight_bytes = static_cast<double>(s.weights.size());
  state.counters["GB/s"] =
      benchmark::Counter(iters * weight_bytes / 1e9, benchmark::Counter::kIsRate);
  state.counters["GFLOP/s"] =
      benchmark::Counter(iters * 2.0 * m * n * k / 1e9, benchmark::Counter::kIsRate);
  state.SetLabel(std::string(GetDTypeInfo(dtype).name) + " " + ActiveTargetName());
}

// Weight shapes [N, K] of the decode-from-DRAM benchmark: a 1B-class FFN matrix, and
// Qwen2.5-0.5B's gate/up and down projections (short rows: 896 and 4864 elements).
const std::pair<int64_t, int64_t> kDramShapes[] = {{8192, 2048}, {4864, 896}, {896, 4864}};

// Decode from DRAM: as many copies of one matrix as fill ~1 GiB (past any L3), multiplied in
// turn, so every weight byte comes from memory as in a real decode step.
// Args: dtype index, threads, huge (1: the copies live on transparent huge pages; 0: 4 KiB pages,
// as in the model's file mapping; 2: the copies are the weights packed at load (PackMatrix, as
// the model does: quantized types on AVX-512 VNNI CPUs, float types on AVX2 and AVX-512), on huge
// pages), shape (index into kDramShapes).
void BM_MatMulDram(benchmark::State& state) {
  const DType dtype = kTypes[state.range(0)];
  const auto [n, k] = kDramShapes[state.range(3)];
  ThreadPool pool(Cores(static_cast<int>(state.range(1))), /*pin=*/true);
  Setup s(dtype, n, k, 1);
  const bool packed = state.range(2) == 2;
  const uint64_t bytes = packed ? PackedMatrixBytes(s.w) : s.weights.size();
  if (bytes == 0) {
    state.SkipWithError("this CPU reads these weights as stored (no packed layout)");
    return;
  }
  const int64_t copies = static_cast<int64_t>((uint64_t{1} << 30) / bytes + 1);
  HugeBuffer huge;
  std::vector<uint8_t> small;
  uint8_t* all = nullptr;
  if (state.range(2)) {
    huge = HugeBuffer(bytes * copies);
    all = huge.data();
  } else {
    small.resize(bytes * copies);
    all = small.data();
  }
  if (packed) PackMatrix(s.w, all);
  const uint8_t* first = packed ? all : s.weights.data();
  for (int64_t c = packed ? 1 : 0; c < copies; ++c)
    std::copy(first, first + bytes, all + c * bytes);
  int64_t c = 0;
  for (auto _ : state) {
    Matrix w = s.w;
    (packed ? w.packed : w.data) = &all[c * bytes];
    c = c + 1 == copies ? 0 : c + 1;
    MatMul(w, s.x.data(), 1, s.y.data(), pool);
    benchmark::DoNotOptimize(s.y.data());
  }
  state.counters["GB/s"] =
      benchmark::Counter(static_cast<double>(state.iterations()) * static_cast<double>(bytes) / 1e9,
                         benchmark::Counter::kIsRate);
  state.SetLabel(std::string(GetDTypeInfo(dtype).name) + " " + ActiveTargetName());
}

void DecodeArgs(benchmark::internal::Benchmark* b) {
  const std::pair<int64_t, int64_t> shapes[] = {
      {576, 576}, {1536, 576}, {576, 1536}, {2048, 2048}, {8192, 2048}};
  for (int64_t t = 0; t < static_cast<int64_t>(std::size(kTypes)); ++t) {
    for (auto [n, k] : shapes) {
      for (int64_t threads : {1, 2}) b->Args({t, n, k, 1, threads});
    }
  }
}

void PrefillArgs(benchmark::internal::Benchmark* b) {
  for (int64_t t = 0; t < static_cast<int64_t>(std::size(kTypes)); ++t) {
    for (auto [n, k] : {std::pair<int64_t, int64_t>{1536, 576}, {2048, 2048}}) {
      for (int64_t threads : {1, 2}) b->Args({t, n, k, 128, threads});
    }
  }
}

// Batched decode and the M at which the quantized GEMM wins: 2048x2048 weights (in L3, so the
// kernel rather than DRAM is measured), m = 1 .. 512, one thread.
void BatchArgs(benchmark::internal::Benchmark* b) {
  for (int64_t t = 2; t < static_cast<int64_t>(std::size(kTypes)); ++t) {
    for (int64_t m : {1, 2, 4, 8, 16, 64, 512}) b->Args({t, 2048, 2048, m, 1});
  }
}

BENCHMARK(BM_MatMul)
    ->Name("MatMul/batch")
    ->ArgNames({"dtype", "N", "K", "m", "threads"})
    ->Apply(BatchArgs)
    ->MinTime(0.2);
BENCHMARK(BM_MatMul)
    ->Name("MatMul/decode")
    ->ArgNames({"dtype", "N", "K", "m", "threads"})
    ->Apply(DecodeArgs)
    ->UseRealTime()
    ->MinTime(0.2);
BENCHMARK(BM_MatMulDram)
    ->Name("MatMul/decode_dram")
    ->ArgNames({"dtype", "threads", "huge", "shape"})
    ->ArgsProduct({{0, 1, 2, 3, 4, 5}, {1, 2}, {0, 1, 2}, {0, 1, 2}})
    ->UseRealTime()
    ->MinTime(0.5);
BENCHMARK(BM_MatMul)
    ->Name("MatMul/prefill")
    ->ArgNames({"dtype", "N", "K", "m", "threads"})
    ->Apply(PrefillArgs)
    ->UseRealTime()
    ->MinTime(0.2);

}  // namespace
}  // namespace kiln::kernels

BENCHMARK_MAIN();
