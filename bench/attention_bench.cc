// PagedAttention throughput on the head layouts of SmolLM2-135M (9 heads over 3 kv heads),
// Qwen2.5-0.5B (14 over 2) and Llama-3.2-1B (32 over 8), head_dim 64: decode (1 or 16
// sequences x 1 token at context `ctx`, one call per sequence as the model issues them, or one
// multi-sequence call) and prefill (one chunk of `ctx` tokens from position 0), f32, bf16 and
// f16 K/V, 1 and 2 pool threads. Reported as (query row, key) pairs per second.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "kernels/paged_attention.h"
#include "util/half.h"
#include "util/thread_pool.h"

namespace kiln::kernels {
namespace {

constexpr AttentionShape kShapes[] = {{9, 3, 64, 0.125f}, {14, 2, 64, 0.125f}, {32, 8, 64, 0.125f}};
constexpr int64_t kBlockSize = 16;

struct Setup {
  std::vector<float> k, v, q, out;
  std::vector<uint16_t> k16, v16;
  std::vector<int32_t> table;
  std::vector<int64_t> pos;
  PagedKv kv;

  // n_seqs sequences of `blocks` blocks each, shuffled over the pool.
  // kv_dtype: 0 f32, 1 bf16, 2 f16.
  Setup(const AttentionShape& shape, int64_t n_seqs, int64_t blocks, int64_t n_tokens,
        int64_t kv_dtype) {
    std::mt19937 rng(1);
    std::normal_distribution<float> dist(0.0f, 1.0f);
    const int64_t kv_dim = shape.n_kv_heads * shape.head_dim;
    k.resize(n_seqs * blocks * kBlockSize * kv_dim);
    v.resize(k.size());
    for (auto& x : k) x = dist(rng);
    for (auto& x : v) x = dist(rng);
    for (int32_t b = 0; b < n_seqs * blocks; ++b) table.push_back(b);
    std::shuffle(table.begin(), table.end(), rng);
    q.resize(n_tokens * shape.n_heads * shape.head_dim);
    for (auto& x : q) x = dist(rng);
    out.resize(q.size());
    kv = PagedKv{k.data(), v.data(), kBlockSize * kv_dim, kBlockSize, table.data()};
    if (kv_dtype != 0) {
      const auto half = kv_dtype == 1 ? F32ToBf16 : F32ToF16;
      k16.resize(k.size());
      v16.resize(v.size());
      std::transform(k.begin(), k.end(), k16.begin(), half);
      std::transform(v.begin(), v.end(), v16.begin(), half);
      kv = PagedKv{k16.data(), v16.data(),   kBlockSize * kv_dim,
                   kBlockSize, table.data(), kv_dtype == 1 ? DType::kBF16 : DType::kF16};
    }
  }
};

std::vector<int> Cores(int64_t threads) {
  std::vector<int> cores;
  for (int i = 0; i < threads; ++i) cores.push_back(i);
  return cores;
}

// Args: shape (kShapes index), kv dtype, ctx, threads, seqs, multi (0: one call per sequence,
// 1: one call for all), layout (0: position major, 1: head major as PagedKvCache stores it).
// With 16 sequences of 1024 positions (16-32 MiB of K/V) the rows come from DRAM, as they do in
// a model's decode step, where each layer's weights evict them.
void BM_Decode(benchmark::State& state) {
  const AttentionShape& shape = kShapes[state.range(0)];
  const int64_t ctx = state.range(2), n_seqs = state.range(4);
  ThreadPool pool(Cores(state.range(3)), /*pin=*/true);
  const int64_t blocks = (ctx + kBlockSize - 1) / kBlockSize;
  Setup s(shape, n_seqs, blocks, n_seqs, state.range(1));
  s.kv.layout = state.range(6) ? KvLayout::kHeadMajor : KvLayout::kPositionMajor;
  std::vector<PagedSeq> seqs;
  for (int64_t i = 0; i < n_seqs; ++i) {
    s.pos.push_back(ctx - 1);
    seqs.push_back({s.table.data() + i * blocks, i, 1});
  }
  const int64_t row = shape.n_heads * shape.head_dim;
  for (auto _ : state) {
    if (state.range(5)) {
      PagedAttention(s.q.data(), s.pos.data(), seqs, s.kv, shape, s.out.data(), pool);
    } else {
      for (const PagedSeq& seq : seqs) {
        PagedKv kv = s.kv;
        kv.block_table = seq.block_table;
        PagedAttention(&s.q[seq.token_begin * row], &s.pos[seq.token_begin], 1, kv, shape,
                       &s.out[seq.token_begin * row], pool);
      }
    }
    benchmark::DoNotOptimize(s.out.data());
  }
  state.counters["pairs/s"] =
      benchmark::Counter(static_cast<double>(state.iterations() * n_seqs * shape.n_heads * ctx),
                         benchmark::Counter::kIsRate);
}

// Args: shape, kv dtype, ctx (= chunk tokens), threads. Head-major K/V, as PagedKvCache.
void BM_Prefill(benchmark::State& state) {
  const AttentionShape& shape = kShapes[state.range(0)];
  const int64_t ctx = state.range(2);
  ThreadPool pool(Cores(state.range(3)), /*pin=*/true);
  Setup s(shape, 1, (ctx + kBlockSize - 1) / kBlockSize, ctx, state.range(1));
  s.kv.layout = KvLayout::kHeadMajor;
  for (int64_t t = 0; t < ctx; ++t) s.pos.push_back(t);
  for (auto _ : state) {
    PagedAttention(s.q.data(), s.pos.data(), ctx, s.kv, shape, s.out.data(), pool);
    benchmark::DoNotOptimize(s.out.data());
  }
  state.counters["pairs/s"] = benchmark::Counter(
      static_cast<double>(state.iterations() * shape.n_heads * ctx * (ctx + 1) / 2),
      benchmark::Counter::kIsRate);
}

BENCHMARK(BM_Decode)
    ->ArgNames({"shape", "kv", "ctx", "threads", "seqs", "multi", "layout"})
    ->ArgsProduct({{0, 1, 2}, {0, 1, 2}, {128, 1024}, {1, 2}, {1, 16}, {0, 1}, {0, 1}})
    ->UseRealTime();
BENCHMARK(BM_Prefill)
    ->ArgNames({"shape", "kv", "ctx", "threads"})
    ->ArgsProduct({{0, 1, 2}, {0, 1, 2}, {512}, {1, 2}})
    ->UseRealTime();

}  // namespace
}  // namespace kiln::kernels

BENCHMARK_MAIN();
