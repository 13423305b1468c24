// PagedAttention throughput on SmolLM2-135M's shape (9 heads over 3 kv heads, head_dim 64):
// decode (16 sequences x 1 token at context `ctx`, one call per sequence as the model issues
// them, or one multi-sequence call) and prefill (one chunk of `ctx` tokens from position 0),
// f32 and bf16 K/V, 1 and 2 pool threads. Reported as (query row, key) pairs per second.
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

constexpr AttentionShape kShape{9, 3, 64, 0.125f};
constexpr int64_t kBlockSize = 16;

struct Setup {
  std::vector<float> k, v, q, out;
  std::vector<uint16_t> k16, v16;
  std::vector<int32_t> table;
  std::vector<int64_t> pos;
  PagedKv kv;

  // n_seqs sequences of `blocks` blocks each, shuffled over the pool.
  Setup(int64_t n_seqs, int64_t blocks, int64_t n_tokens, bool bf16) {
    std::mt19937 rng(1);
    std::normal_distribution<float> dist(0.0f, 1.0f);
    const int64_t kv_dim = kShape.n_kv_heads * kShape.head_dim;
    k.resize(n_seqs * blocks * kBlockSize * kv_dim);
    v.resize(k.size());
    for (auto& x : k) x = dist(rng);
    for (auto& x : v) x = dist(rng);
    for (int32_t b = 0; b < n_seqs * blocks; ++b) table.push_back(b);
    std::shuffle(table.begin(), table.end(), rng);
    q.resize(n_tokens * kShape.n_heads * kShape.head_dim);
    for (auto& x : q) x = dist(rng);
    out.resize(q.size());
    kv = PagedKv{k.data(), v.data(), kBlockSize * kv_dim, kBlockSize, table.data()};
    if (bf16) {
      k16.resize(k.size());
      v16.resize(v.size());
      std::transform(k.begin(), k.end(), k16.begin(), F32ToBf16);
      std::transform(v.begin(), v.end(), v16.begin(), F32ToBf16);
      kv = PagedKv{k16.data(), v16.data(),   kBlockSize * kv_dim,
                   kBlockSize, table.data(), DType::kBF16};
    }
  }
};

std::vector<int> Cores(int64_t threads) {
  std::vector<int> cores;
  for (int i = 0; i < threads; ++i) cores.push_back(i);
  return cores;
}

// Args: bf16, ctx, threads, multi (0: one call per sequence, 1: one call for all).
void BM_Decode(benchmark::State& state) {
  const bool bf16 = state.range(0) != 0;
  const int64_t ctx = state.range(1), n_seqs = 16;
  ThreadPool pool(Cores(state.range(2)), /*pin=*/true);
  const int64_t blocks = (ctx + kBlockSize - 1) / kBlockSize;
  Setup s(n_seqs, blocks, n_seqs, bf16);
  std::vector<PagedSeq> seqs;
  for (int64_t i = 0; i < n_seqs; ++i) {
    s.pos.push_back(ctx - 1);
    seqs.push_back({s.table.data() + i * blocks, i, 1});
  }
  const int64_t row = kShape.n_heads * kShape.head_dim;
  for (auto _ : state) {
    if (state.range(3)) {
      PagedAttention(s.q.data(), s.pos.data(), seqs, s.kv, kShape, s.out.data(), pool);
    } else {
      for (const PagedSeq& seq : seqs) {
        PagedKv kv = s.kv;
        kv.block_table = seq.block_table;
        PagedAttention(&s.q[seq.token_begin * row], &s.pos[seq.token_begin], 1, kv, kShape,
                       &s.out[seq.token_begin * row], pool);
      }
    }
    benchmark::DoNotOptimize(s.out.data());
  }
  state.counters["pairs/s"] =
      benchmark::Counter(static_cast<double>(state.iterations() * n_seqs * kShape.n_heads * ctx),
                         benchmark::Counter::kIsRate);
}

// Args: bf16, ctx (= chunk tokens), threads.
void BM_Prefill(benchmark::State& state) {
  const bool bf16 = state.range(0) != 0;
  const int64_t ctx = state.range(1);
  ThreadPool pool(Cores(state.range(2)), /*pin=*/true);
  Setup s(1, (ctx + kBlockSize - 1) / kBlockSize, ctx, bf16);
  for (int64_t t = 0; t < ctx; ++t) s.pos.push_back(t);
  for (auto _ : state) {
    PagedAttention(s.q.data(), s.pos.data(), ctx, s.kv, kShape, s.out.data(), pool);
    benchmark::DoNotOptimize(s.out.data());
  }
  state.counters["pairs/s"] = benchmark::Counter(
      static_cast<double>(state.iterations() * kShape.n_heads * ctx * (ctx + 1) / 2),
      benchmark::Counter::kIsRate);
}

BENCHMARK(BM_Decode)
    ->ArgNames({"bf16", "ctx", "threads", "multi"})
    ->ArgsProduct({{0, 1}, {128, 1024}, {1, 2}, {0, 1}})
    ->UseRealTime();
BENCHMARK(BM_Prefill)
    ->ArgNames({"bf16", "ctx", "threads"})
    ->ArgsProduct({{0, 1}, {512}, {1, 2}})
    ->UseRealTime();

}  // namespace
}  // namespace kiln::kernels

BENCHMARK_MAIN();
