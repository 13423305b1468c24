// Span times are wall-clock (unix ns) but requests are timed on steady_clock: one pairing of
// the two, taken when the request arrived, converts every later steady time point of it.
#pragma once

#include <chrono>
#include <cstdint>

namespace kiln::telemetry {

class WallClock {
 public:
  using Steady = std::chrono::steady_clock;
  explicit WallClock(Steady::time_point origin)
      : origin_(origin),
        origin_wall_(std::chrono::system_clock::now() -
                     std::chrono::duration_cast<std::chrono::system_clock::duration>(
                         Steady::now() - origin)) {}

  uint64_t UnixNanos(Steady::time_point t) const {
    const auto wall =
        origin_wall_ + std::chrono::duration_cast<std::chrono::system_clock::duration>(t - origin_);
    return static_cast<uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(wall.time_since_epoch()).count());
  }

 private:
  Steady::time_point origin_;
  std::chrono::system_clock::time_point origin_wall_;
};

}  // namespace kiln::telemetry
