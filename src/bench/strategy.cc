#include "bench/strategy.h"

#include <algorithm>
#include <cstdio>

#include "util/error.h"

namespace kiln::bench {

const char* Strategy::KindName() const {
  switch (kind) {
    case StrategyKind::kSynchronous:
      return "synchronous";
    case StrategyKind::kConcurrent:
      return "concurrent";
    case StrategyKind::kThroughput:
      return "throughput";
    case StrategyKind::kConstant:
      return "constant";
    case StrategyKind::kPoisson:
      return "poisson";
  }
  return "?";
}

std::string Strategy::Label() const {
  char buf[64];
  if (open_loop()) {
    std::snprintf(buf, sizeof buf, "%s@%.2f", KindName(), rate);
    return buf;
  }
  if (kind == StrategyKind::kConcurrent) return StrCat("concurrent@", streams);
  return KindName();
}

int64_t Strategy::ConcurrencyLimit() const {
  switch (kind) {
    case StrategyKind::kSynchronous:
      return 1;
    case StrategyKind::kConcurrent:
      return std::min(streams, max_concurrency);
    default:
      return max_concurrency;
  }
}

ArrivalSchedule::ArrivalSchedule(const Strategy& strategy)
    : strategy_(strategy), rng_(strategy.seed) {
  KILN_CHECK(strategy.open_loop() && strategy.rate > 0,
             "an arrival schedule needs a constant or poisson strategy with a rate > 0");
}

double ArrivalSchedule::Next() {
  if (strategy_.kind == StrategyKind::kConstant) {
    return static_cast<double>(count_++) / strategy_.rate;
  }
  last_ += std::exponential_distribution<double>(strategy_.rate)(rng_);
  ++count_;
  return last_;
}

}  // namespace kiln::bench
