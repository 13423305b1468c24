// The last few thousand observations of a latency with their times, for percentiles over a
// sliding window (/v1/status's TTFT and ITL p50/p95). A Prometheus histogram is cumulative
// since start; a monitor wants "now". Fixed memory: a full ring overwrites its oldest sample,
// so a busy server's window is the last `capacity` samples when they span less time.
#pragma once

#include <chrono>
#include <cstddef>
#include <mutex>
#include <vector>

namespace kiln {

struct WindowQuantiles {
  size_t count = 0;  // samples in the window
  double p50 = 0.0;
  double p95 = 0.0;
};

class RecentSamples {
 public:
  using Clock = std::chrono::steady_clock;

  explicit RecentSamples(size_t capacity = 4096);

  void Observe(double value, Clock::time_point now = Clock::now());
  // Nearest-rank p50/p95 of the samples newer than now - window; zeros when there are none.
  WindowQuantiles Quantiles(Clock::duration window, Clock::time_point now = Clock::now()) const;

 private:
  struct Sample {
    Clock::time_point at;
    double value;
  };
  mutable std::mutex mu_;
  std::vector<Sample> ring_;
  size_t next_ = 0;  // where the next sample goes
  size_t size_ = 0;
};

}  // namespace kiln
