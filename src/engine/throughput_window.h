// Tokens per second over the last few seconds: a ring of (time, cumulative count) samples taken
// at most every 100 ms, so the rate follows load changes without per-token bookkeeping.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>

namespace kiln {

class ThroughputWindow {
 public:
  using Clock = std::chrono::steady_clock;

  // `total`: cumulative count now. Returns the rate over the window.
  double Update(int64_t total, Clock::time_point now = Clock::now()) {
    if (size_ == 0 || now - samples_[Newest()].time >= std::chrono::milliseconds(100)) {
      samples_[(start_ + size_) % kSlots] = {now, total};
      if (size_ < kSlots) {
        ++size_;
      } else {
        start_ = (start_ + 1) % kSlots;
      }
    }
    const Sample& oldest = samples_[start_];
    const double seconds = std::chrono::duration<double>(now - oldest.time).count();
    return seconds > 0 ? static_cast<double>(total - oldest.total) / seconds : 0.0;
  }

 private:
  static constexpr size_t kSlots = 50;  // 5 s at 100 ms
  struct Sample {
    Clock::time_point time;
    int64_t total = 0;
  };
  size_t Newest() const { return (start_ + size_ - 1) % kSlots; }

  std::array<Sample, kSlots> samples_{};
  size_t start_ = 0, size_ = 0;
};

}  // namespace kiln
