#include <gtest/gtest.h>

#include <ctime>

#include "util/thread_pool.h"

namespace kiln {
namespace {

// Burns `ms` of the calling thread's own CPU time (not wall time: on a loaded machine the
// thread may be descheduled, and the assertions below are about CPU time).
void Spin(int ms) {
  const auto used = [] {
    timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
  };
  const double end = used() + ms * 1e-3;
  volatile uint64_t x = 0;
  while (used() < end) x = x + 1;
}

TEST(ThreadPoolCpu, EveryWorkerIncludingTheCallerHasItsClock) {
  ThreadPool pool({0, 1}, /*pin=*/false);
  EXPECT_EQ(pool.cores(), (std::vector<int>{0, 1}));
  const std::vector<double> before = pool.CpuSeconds();
  ASSERT_EQ(before.size(), 2u);
  EXPECT_EQ(before[0], 0.0);  // no job yet: the caller is not known
  pool.RunOnAll([](int, int) { Spin(30); });
  const std::vector<double> after = pool.CpuSeconds();
  EXPECT_GE(after[0], 0.03);
  EXPECT_GE(after[1] - before[1], 0.03);
}

TEST(ThreadPoolCpu, AOneWorkerPoolCountsTheThreadThatRecordedItself) {
  ThreadPool pool({0}, /*pin=*/false);
  pool.RecordCallerClock();
  Spin(20);
  EXPECT_GE(pool.CpuSeconds().at(0), 0.02);
}

}  // namespace
}  // namespace kiln
