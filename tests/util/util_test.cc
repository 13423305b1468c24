#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <numeric>
#include <thread>

#include "util/core_set.h"
#include "util/dtype.h"
#include "util/error.h"
#include "util/half.h"
#include "util/thread_pool.h"
#include "util/utf8.h"

namespace kiln {
namespace {

TEST(CoreSet, ParsesRangesAndLists) {
  EXPECT_EQ(ParseCoreSet("0-3,6"), (std::vector<int>{0, 1, 2, 3, 6}));
  EXPECT_EQ(ParseCoreSet("5,1,1,2-3"), (std::vector<int>{1, 2, 3, 5}));
  EXPECT_EQ(FormatCoreSet({0, 1, 2, 3, 6, 8, 9}), "0-3,6,8-9");
}

TEST(CoreSet, RejectsBadSyntax) {
  for (const char* bad : {"", "a", "1-", "-1", "3-1", "1,,2", "1-2-3", "99999", "1 2"}) {
    EXPECT_THROW(ParseCoreSet(bad), Error) << bad;
  }
}

TEST(CoreSet, AllowedCoresIsNotEmpty) { EXPECT_FALSE(AllowedCores().empty()); }

TEST(ThreadPool, ParallelForCoversEveryIndexOnce) {
  for (int workers : {1, 2, 3}) {
    ThreadPool pool(std::vector<int>(workers, 0), /*pin=*/false);
    for (int64_t n : {1, 7, 64, 1000}) {
      std::vector<std::atomic<int>> hits(n);
      for (int rep = 0; rep < 50; ++rep) {
        pool.ParallelFor(n, 4, [&](int64_t b, int64_t e) {
          for (int64_t i = b; i < e; ++i) hits[i].fetch_add(1);
        });
      }
      for (int64_t i = 0; i < n; ++i) ASSERT_EQ(hits[i].load(), 50) << workers << " " << n;
    }
  }
}

// Jobs spaced wider than the spin budget: workers (and the caller, waiting on a slow worker)
// go through the futex sleep and wake-up every time; more workers than cores oversubscribes.
TEST(ThreadPool, SleepingWorkersWakeForEveryJob) {
  for (int workers : {2, 5}) {
    ThreadPool pool(std::vector<int>(workers, 0), /*pin=*/false);
    std::atomic<int> runs{0};
    for (int rep = 0; rep < 40; ++rep) {
      if (rep % 2) std::this_thread::sleep_for(std::chrono::microseconds(500));
      pool.RunOnAll([&](int w, int nw) {
        EXPECT_EQ(nw, workers);
        if (w == nw - 1 && rep % 4 == 1)
          std::this_thread::sleep_for(std::chrono::microseconds(300));
        runs.fetch_add(1);
      });
      ASSERT_EQ(runs.load(), (rep + 1) * workers);
    }
  }
}

TEST(Half, RoundTrips) {
  EXPECT_EQ(Bf16ToF32(F32ToBf16(1.5f)), 1.5f);
  EXPECT_EQ(F16ToF32(F32ToF16(-2.25f)), -2.25f);
  EXPECT_EQ(F32ToBf16(1.0f + 1.0f / 256), F32ToBf16(1.0f));  // ties to even
}

TEST(DType, BlockSizes) {
  EXPECT_EQ(*BytesForElements(DType::kQ4_1, 64), 40u);
  EXPECT_FALSE(BytesForElements(DType::kQ8_0, 33).has_value());
  EXPECT_FALSE(BytesForElements(DType::kF32, UINT64_MAX / 2).has_value());
  EXPECT_EQ(DTypeFromGgmlType(3), DType::kQ4_1);
  EXPECT_FALSE(DTypeFromGgmlType(999).has_value());
}

TEST(Utf8, StreamBufferHoldsPartialCharacters) {
  Utf8StreamBuffer buf;
  std::string euro = "\xE2\x82\xAC";
  EXPECT_EQ(buf.Push(euro.substr(0, 1)), "");
  EXPECT_EQ(buf.Push(euro.substr(1, 1)), "");
  EXPECT_EQ(buf.Push(euro.substr(2) + "a"), euro + "a");
  EXPECT_EQ(buf.Push("\xF0\x9F"), "");
  EXPECT_EQ(buf.Flush(), "\xEF\xBF\xBD");
}

TEST(Utf8, ReplacesInvalidBytes) {
  EXPECT_EQ(ValidUtf8OrReplace("a\xFF"
                               "b"),
            "a\xEF\xBF\xBD"
            "b");
  EXPECT_EQ(ValidUtf8OrReplace("\xED\xA0\x80"), "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");
  EXPECT_EQ(CompleteUtf8Prefix("ab\xE2\x82"), 2u);
}

}  // namespace
}  // namespace kiln
