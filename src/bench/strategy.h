// Scheduling strategies (GuideLLM's scheduler strategies) and the send times of the open-loop
// ones.
#pragma once

#include <cstdint>
#include <random>
#include <string>

namespace kiln::bench {

enum class StrategyKind {
  kSynchronous,  // one request at a time
  kConcurrent,   // `streams` requests always in flight (closed loop)
  kThroughput,   // as many in flight as max_concurrency allows
  kConstant,     // open loop, evenly spaced at `rate` requests/s
  kPoisson,      // open loop, exponential gaps around `rate` requests/s
};

struct Strategy {
  StrategyKind kind = StrategyKind::kSynchronous;
  double rate = 0;                  // requests/s, constant and poisson
  int64_t streams = 1;              // concurrent
  int64_t max_concurrency = 10240;  // cap on requests in flight (GuideLLM's default)
  uint64_t seed = 42;               // poisson arrivals

  const char* KindName() const;  // "synchronous", "concurrent", ...
  std::string Label() const;     // "constant@2.50", "concurrent@8", "throughput"
  bool open_loop() const {
    return kind == StrategyKind::kConstant || kind == StrategyKind::kPoisson;
  }
  // The most requests in flight at once.
  int64_t ConcurrencyLimit() const;
};

// Send times of an open-loop strategy, in seconds from the benchmark start.
class ArrivalSchedule {
 public:
  explicit ArrivalSchedule(const Strategy& strategy);
  // Time of the next request: i / rate for constant (the first at 0), a cumulative sum of
  // exponential gaps with mean 1 / rate for poisson.
  double Next();

 private:
  Strategy strategy_;
  std::mt19937_64 rng_;
  int64_t count_ = 0;
  double last_ = 0;
};

}  // namespace kiln::bench
