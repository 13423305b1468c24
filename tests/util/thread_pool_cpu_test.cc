#include <gtest/gtest.h>

#include <chrono>

#include "util/thread_pool.h"

namespace kiln {
namespace {

// Burns about `ms` of CPU on the calling thread.
void Spin(int ms) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
  volatile uint64_t x = 0;
  while (std::chrono::steady_clock::now() < end) x = x + 1;
}

TEST(ThreadPoolCpu, EveryWorkerIncludingTheCallerHasItsClock) {
  ThreadPool pool({0, 1}, /*pin=*/false);
  EXPECT_EQ(pool.cores(), (std::vector<int>{0, 1}));
  const std::vector<double> before = pool.CpuSeconds();
  ASSERT_EQ(before.size(), 2u);
  EXPECT_EQ(before[0], 0.0);  // no job yet: the caller is not known
  pool.RunOnAll([](int, int) { Spin(30); });
  const std::vector<double> after = pool.CpuSeconds();
  EXPECT_GT(after[0], 0.01);
  EXPECT_GT(after[1] - before[1], 0.01);
}

TEST(ThreadPoolCpu, AOneWorkerPoolCountsTheThreadThatRecordedItself) {
  ThreadPool pool({0}, /*pin=*/false);
  pool.RecordCallerClock();
  Spin(20);
  EXPECT_GT(pool.CpuSeconds().at(0), 0.005);
}

}  // namespace
}  // namespace kiln
