#include "util/thread_pool.h"

#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <ctime>

namespace kiln {
namespace {

inline void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

// Futex wait/wake on a 32-bit atomic (private to this process). Spurious wake-ups are fine:
// every caller re-checks its condition in a loop.
void FutexWait(std::atomic<uint32_t>& word, uint32_t expected) {
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(&word), FUTEX_WAIT_PRIVATE, expected, nullptr,
          nullptr, 0);
}

void FutexWakeAll(std::atomic<uint32_t>& word) {
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(&word), FUTEX_WAKE_PRIVATE, INT32_MAX, nullptr,
          nullptr, 0);
}

// Spins until pred() or until `budget` has passed; returns pred()'s last value. The clock is
// read every 64 pauses only (a pause is 10-150 cycles depending on the core).
template <typename Pred>
bool SpinFor(std::chrono::nanoseconds budget, Pred pred) {
  if (budget.count() <= 0) return pred();
  const auto deadline = std::chrono::steady_clock::now() + budget;
  for (;;) {
    for (int i = 0; i < 64; ++i) {
      if (pred()) return true;
      CpuRelax();
    }
    if (std::chrono::steady_clock::now() >= deadline) return pred();
  }
}

}  // namespace

bool PinCurrentThread(int core) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(core, &set);
  return pthread_setaffinity_np(pthread_self(), sizeof(set), &set) == 0;
}

ThreadPool::ThreadPool(const std::vector<int>& cores, bool pin)
    : num_workers_(std::max<int>(1, static_cast<int>(cores.size()))),
      cores_(cores),
      clocks_(static_cast<size_t>(num_workers_), clockid_t{-1}) {
  if (pin && !cores.empty()) caller_core_ = cores[0];
  for (int w = 1; w < num_workers_; ++w) {
    threads_.emplace_back([this, w, pin, core = cores[w]] {
      if (pin) PinCurrentThread(core);
      WorkerLoop(w);
    });
    clockid_t clock;
    if (pthread_getcpuclockid(threads_.back().native_handle(), &clock) == 0) clocks_[w] = clock;
  }
}

std::vector<double> ThreadPool::CpuSeconds() const {
  std::vector<double> out(clocks_.size(), 0.0);
  for (size_t w = 0; w < clocks_.size(); ++w) {
    if (w == 0 && !caller_clock_set_.load(std::memory_order_acquire)) continue;
    timespec ts;
    if (clocks_[w] != clockid_t{-1} && clock_gettime(clocks_[w], &ts) == 0) {
      out[w] = static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
    }
  }
  return out;
}

ThreadPool::~ThreadPool() {
  stop_.store(true);
  epoch_.fetch_add(1);
  FutexWakeAll(epoch_);
  for (auto& t : threads_) t.join();
}

void ThreadPool::RecordCallerClock() {
  // The engine thread runs every job: its clock is worker 0's (taken once).
  if (caller_clock_set_.load(std::memory_order_relaxed)) return;
  clockid_t clock;
  if (pthread_getcpuclockid(pthread_self(), &clock) == 0) clocks_[0] = clock;
  caller_clock_set_.store(true, std::memory_order_release);
}

void ThreadPool::PinCaller() {
  RecordCallerClock();
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
  pending_.store(static_cast<uint32_t>(num_workers_ - 1), std::memory_order_relaxed);
  // seq_cst publish, then the sleepers check (pairs with the worker's sleepers_ increment
  // before its futex wait): either the worker sees the new epoch or we see it asleep.
  epoch_.fetch_add(1);
  if (sleepers_.load() > 0) FutexWakeAll(epoch_);
  fn(0, num_workers_);
  const auto done = [this] { return pending_.load(std::memory_order_acquire) == 0; };
  if (!SpinFor(kSpin, done)) {
    // A worker is late (descheduled, or sharing our core): sleep instead of burning the core
    // it may need. The last worker wakes us (see WorkerLoop).
    caller_waiting_.store(true);
    for (uint32_t p = pending_.load(); p != 0; p = pending_.load()) FutexWait(pending_, p);
    caller_waiting_.store(false, std::memory_order_relaxed);
  }
  job_ = nullptr;
}

void ThreadPool::WorkerLoop(int worker) {
  uint32_t seen = 0;
  for (;;) {
    uint32_t now = seen;
    const auto changed = [&] {
      now = epoch_.load();  // seq_cst: pairs with RunOnAll's epoch bump / sleepers_ check
      return now != seen;
    };
    if (!SpinFor(kSpin, changed)) {
      sleepers_.fetch_add(1);
      while (!changed()) FutexWait(epoch_, seen);
      sleepers_.fetch_sub(1);
    }
    seen = now;
    if (stop_.load()) return;
    (*job_)(worker, num_workers_);
    if (pending_.fetch_sub(1) == 1 && caller_waiting_.load()) FutexWakeAll(pending_);
  }
}

}  // namespace kiln
