// K-quant MatMul throughput (q4_K, q5_K, q6_K and the q5_0 fallback), next to q8_0 and q4_0 for
// reference: decode (m = 1) as GB/s of weights streamed, prefill (m = 128) as GFLOP/s, with 1
// and 2 pool threads. Shapes fit in cache, so GB/s measure the kernel rather than DRAM.
// K-quant weights are random valid blocks (Kiln has no K-quant quantizer; llama.cpp makes
// them), with realistic f16 super-block scales.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "kernels/kquant.h"
#include "kernels/ops.h"
#include "util/dtype.h"
#include "util/half.h"
#include "util/thread_pool.h"

namespace kiln::kernels {
namespace {

const DType kTypes[] = {DType::kQ4_K, DType::kQ5_K, DType::kQ6_K,
                        DType::kQ5_0, DType::kQ8_0, DType::kQ4_0};

struct Setup {
  std::vector<uint8_t> weights;
  Matrix w;
  std::vector<float> x, y;

  Setup(DType t, int64_t n, int64_t k, int64_t m) : x(m * k), y(m * n) {
    std::mt19937 rng(42);
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    const uint64_t row_bytes = *BytesForElements(t, k);
    weights.resize(row_bytes * n);
    if (HasKQuantKernels(t)) {
      for (uint8_t& b : weights) b = static_cast<uint8_t>(rng());
      const int bb = GetDTypeInfo(t).block_bytes;
      const uint16_t d = F32ToF16(0.01f);
      for (uint64_t off = 0; off < weights.size(); off += bb) {
        std::memcpy(&weights[off + (t == DType::kQ6_K ? offsetof(BlockQ6_K, d) : 0)], &d, 2);
        if (t != DType::kQ6_K && t != DType::kQ5_0) std::memcpy(&weights[off + 2], &d, 2);
      }
    } else {
      std::vector<float> row(k);
      for (int64_t r = 0; r < n; ++r) {
        for (float& v : row) v = dist(rng);
        QuantizeRow(t, row.data(), k, &weights[r * row_bytes]);
      }
    }
    for (float& v : x) v = dist(rng);
    w = Matrix{t, n, k, weights.data(), row_bytes};
  }
};

std::vector<int> Cores(int threads) {
  std::vector<int> cores;
  for (int i = 0; i < threads; ++i) cores.push_back(i);
  return cores;
}

// Args: dtype index, N, K, m, threads.
void BM_KQuantMatMul(benchmark::State& state) {
  const DType t = kTypes[state.range(0)];
  const int64_t n = state.range(1), k = state.range(2), m = state.range(3);
  ThreadPool pool(Cores(static_cast<int>(state.range(4))), /*pin=*/true);
  Setup s(t, n, k, m);
  for (auto _ : state) {
    MatMul(s.w, s.x.data(), m, s.y.data(), pool);
    benchmark::DoNotOptimize(s.y.data());
  }
  const double iters = static_cast<double>(state.iterations());
  state.counters["GB/s"] = benchmark::Counter(iters * static_cast<double>(s.weights.size()) / 1e9,
                                              benchmark::Counter::kIsRate);
  state.counters["GFLOP/s"] =
      benchmark::Counter(iters * 2.0 * m * n * k / 1e9, benchmark::Counter::kIsRate);
  state.SetLabel(std::string(GetDTypeInfo(t).name) + " " + ActiveTargetName());
}

void Args(benchmark::internal::Benchmark* b) {
  for (int64_t t = 0; t < static_cast<int64_t>(std::size(kTypes)); ++t) {
    for (int64_t threads : {1, 2}) {
      b->Args({t, 1536, 1536, 1, threads});
      b->Args({t, 2048, 2048, 1, threads});
      b->Args({t, 2048, 2048, 128, threads});
    }
  }
}

BENCHMARK(BM_KQuantMatMul)
    ->Name("KQuantMatMul")
    ->ArgNames({"dtype", "N", "K", "m", "threads"})
    ->Apply(Args)
    ->UseRealTime()
    ->MinTime(0.2);

}  // namespace
}  // namespace kiln::kernels

BENCHMARK_MAIN();
