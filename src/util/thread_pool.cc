#include "util/thread_pool.h"

#include <pthread.h>
#include <sched.h>

#include <algorithm>

namespace kiln {
namespace {

inline void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

// About 50-100 us of spinning before a worker sleeps.
constexpr int kSpinIterations = 20000;

}  // namespace

bool PinCurrentThread(int core) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(core, &set);
  return pthread_setaffinity_np(pthread_self(), sizeof(set), &set) == 0;
}

ThreadPool::ThreadPool(const std::vector<int>& cores, bool pin)
    : num_workers_(std::max<int>(1, static_cast<int>(cores.size()))) {
  if (pin && !cores.empty()) caller_core_ = cores[0];
  for (int w = 1; w < num_workers_; ++w) {
    threads_.emplace_back([this, w, pin, core = cores[w]] {
      if (pin) PinCurrentThread(core);
      WorkerLoop(w);
    });
  }
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_.store(true);
    epoch_.fetch_add(1);
  }
  wake_.notify_all();
  for (auto& t : threads_) t.join();
}

void ThreadPool::PinCaller() {
  if (caller_core_ < 0 || pinned_caller_ == std::this_thread::get_id()) return;
  PinCurrentThread(caller_core_);
  pinned_caller_ = std::this_thread::get_id();
}

void ThreadPool::RunOnAll(const std::function<void(int, int)>& fn) {
  PinCaller();
  if (num_workers_ == 1) {
    fn(0, 1);
    return;
  }
  job_ = &fn;
  pending_.store(num_workers_ - 1, std::memory_order_relaxed);
  {
    // Publishing under the mutex pairs with the sleepers' predicate check.
    std::lock_guard<std::mutex> lock(mu_);
    epoch_.fetch_add(1, std::memory_order_release);
  }
  if (sleepers_.load(std::memory_order_acquire) > 0) wake_.notify_all();
  fn(0, num_workers_);
  while (pending_.load(std::memory_order_acquire) != 0) CpuRelax();
  job_ = nullptr;
}

void ThreadPool::WorkerLoop(int worker) {
  uint64_t seen = 0;
  for (;;) {
    uint64_t now = epoch_.load(std::memory_order_acquire);
    for (int i = 0; now == seen && i < kSpinIterations; ++i) {
      CpuRelax();
      now = epoch_.load(std::memory_order_acquire);
    }
    if (now == seen) {
      std::unique_lock<std::mutex> lock(mu_);
      sleepers_.fetch_add(1);
      wake_.wait(lock, [&] { return epoch_.load(std::memory_order_acquire) != seen; });
      sleepers_.fetch_sub(1);
      now = epoch_.load(std::memory_order_acquire);
    }
    seen = now;
    if (stop_.load()) return;
    (*job_)(worker, num_workers_);
    pending_.fetch_sub(1, std::memory_order_acq_rel);
  }
}

}  // namespace kiln
