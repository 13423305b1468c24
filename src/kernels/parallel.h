// Internal: static splitting of an index range over a ThreadPool.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>

#include "util/thread_pool.h"

namespace kiln::kernels {

// Runs fn(begin, end) over [0, n) split into one contiguous, grain-aligned range per worker
// (on the calling thread alone when the pool has one worker or n <= grain). The lambda handed
// to the pool captures a single pointer so that std::function stores it without allocating.
template <typename F>
void SplitRange(ThreadPool& pool, int64_t n, int64_t grain, const F& fn) {
  if (n <= 0) return;
  if (pool.size() == 1 || n <= grain) {
    fn(int64_t{0}, n);
    return;
  }
  struct Job {
    const F* fn;
    int64_t n, grain;
  } job{&fn, n, grain};
  pool.RunOnAll([&job](int worker, int workers) {
    const int64_t units = (job.n + job.grain - 1) / job.grain;
    const int64_t begin = units * worker / workers * job.grain;
    const int64_t end = std::min(job.n, units * (worker + 1) / workers * job.grain);
    if (begin < end) (*job.fn)(begin, end);
  });
}

// Runs fn(begin, end) over [0, n) in grain-aligned chunks that the workers claim in turn, about
// chunks_per_worker per worker: a worker slowed down (a busy neighbour on its core or memory
// channel, a late wake-up) takes fewer chunks instead of holding everyone up at the end, which
// a static split would. For work whose result per index does not depend on the chunking.
template <typename F>
void SplitRangeDynamic(ThreadPool& pool, int64_t n, int64_t grain, int64_t chunks_per_worker,
                       const F& fn) {
  if (n <= 0) return;
  const int64_t units = (n + grain - 1) / grain;
  const int64_t workers = pool.size();
  if (workers == 1 || units <= 1) {
    fn(int64_t{0}, n);
    return;
  }
  const int64_t chunk = std::max<int64_t>(1, units / (workers * chunks_per_worker));
  // Claimed from a counter on its own cache line.
  struct alignas(64) Job {
    std::atomic<int64_t> next{0};
    const F* fn;
    int64_t n, grain, units, chunk;
  } job;
  job.fn = &fn;
  job.n = n;
  job.grain = grain;
  job.units = units;
  job.chunk = chunk;
  pool.RunOnAll([&job](int, int) {
    for (;;) {
      const int64_t u = job.next.fetch_add(job.chunk, std::memory_order_relaxed);
      if (u >= job.units) return;
      (*job.fn)(u * job.grain, std::min(job.n, (u + job.chunk) * job.grain));
    }
  });
}

}  // namespace kiln::kernels
