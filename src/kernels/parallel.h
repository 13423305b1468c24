// Internal: static splitting of an index range over a ThreadPool.
#pragma once

#include <algorithm>
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

}  // namespace kiln::kernels
