// A fixed pool of compute threads pinned to a core set, used inside forward() with a static
// work split. The calling thread takes part as worker 0, so a pool of N cores starts N-1 threads.
// Waiting is bounded spinning, then a futex: workers spin kSpin between jobs (a decode step
// issues hundreds of small parallel ops, and a wake-up costs tens of microseconds), then sleep,
// so an idle server does not burn its cores. The caller waiting for the last worker spins the
// same short time and then sleeps too: when the pool shares cores with other processes, an
// unbounded spin would keep a descheduled worker from running (the 3.5x slow-down of issue #6).
#pragma once

#include <pthread.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <thread>
#include <type_traits>
#include <vector>

namespace kiln {

class ThreadPool {
 public:
  // `cores`: core ids to pin to (worker i -> cores[i]); empty = one unpinned thread.
  // `pin`: false leaves threads unpinned (tests, oversubscribed machines).
  explicit ThreadPool(const std::vector<int>& cores, bool pin = true);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return num_workers_; }
  // The core of each worker (empty when the pool was made unpinned from no core set).
  const std::vector<int>& cores() const { return cores_; }
  // CPU time (s) each worker thread has used, worker 0 being the caller that ran the pool:
  // `kiln top` turns deltas of these into per-core utilization. Worker 0 reads 0 until the
  // pool's first job. Thread-safe.
  std::vector<double> CpuSeconds() const;
  // Makes the calling thread worker 0 for CpuSeconds(). RunOnAll does it; callers that run a
  // one-worker pool's work inline (kernels/parallel.h) call it themselves. One relaxed load
  // after the first call.
  void RecordCallerClock();

  // Runs fn(worker, num_workers) once on every worker, the caller being worker 0 (pinned to
  // cores[0] on its first call), and returns when all are done. Not reentrant: call it from one
  // thread at a time.
  void RunOnAll(const std::function<void(int, int)>& fn);

  // Splits [0, n) into size() contiguous chunks (aligned to `grain`) and runs
  // fn(begin, end) for each non-empty chunk.
  template <typename F>
  void ParallelFor(int64_t n, int64_t grain, F&& fn) {
    if (n <= 0) return;
    if (num_workers_ == 1 || n <= grain) {
      PinCaller();
      fn(int64_t{0}, n);
      return;
    }
    // One captured pointer keeps the std::function in its inline buffer: no allocation per call.
    struct Job {
      int64_t n, grain;
      std::remove_reference_t<F>* fn;
    } job{n, grain, &fn};
    RunOnAll([&job](int w, int nw) {
      int64_t blocks = (job.n + job.grain - 1) / job.grain;
      int64_t b0 = blocks * w / nw, b1 = blocks * (w + 1) / nw;
      int64_t begin = b0 * job.grain, end = std::min<int64_t>(job.n, b1 * job.grain);
      if (begin < end) (*job.fn)(begin, end);
    });
  }

 private:
  void WorkerLoop(int worker);

  void PinCaller();

  int num_workers_;
  std::vector<int> cores_;
  // Per-worker CPU clocks; worker 0's is set by the first RunOnAll/ParallelFor caller.
  std::vector<clockid_t> clocks_;
  std::atomic<bool> caller_clock_set_{false};
  int caller_core_ = -1;  // -1: do not pin the calling thread
  std::thread::id pinned_caller_;
  std::vector<std::thread> threads_;
  // Spin budget before a futex wait (workers between jobs; the caller waiting for workers).
  // On a KVM guest a futex wake costs tens of microseconds, and the two halves of a decode
  // MatMul finish up to ~100 us apart when memory is shared with neighbours: 30 us cost 7-8%
  // of Qwen2.5-0.5B decode against 250 us (1 ms measured the same as 250 us).
  static constexpr std::chrono::microseconds kSpin{250};

  const std::function<void(int, int)>* job_ = nullptr;
  std::atomic<uint32_t> epoch_{0};    // bumped per job; futex word for sleeping workers
  std::atomic<uint32_t> pending_{0};  // workers still running the job; futex word for the caller
  std::atomic<bool> caller_waiting_{false};
  std::atomic<bool> stop_{false};
  std::atomic<int> sleepers_{0};
};

// Pins the calling thread to one core; returns false if the OS refused.
bool PinCurrentThread(int core);

}  // namespace kiln
