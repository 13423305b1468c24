#include "bench/profile.h"

#include <cmath>

#include "util/error.h"

namespace kiln::bench {

std::vector<double> Linspace(double start, double stop, int64_t num) {
  std::vector<double> out;
  if (num <= 0) return out;
  if (num == 1) return {start};
  const double step = (stop - start) / static_cast<double>(num - 1);
  for (int64_t i = 0; i < num; ++i) out.push_back(start + step * static_cast<double>(i));
  out.back() = stop;
  return out;
}

Profile::Profile(const ProfileOptions& options) : options_(options) {
  const std::string& k = options.kind;
  KILN_CHECK(k == "synchronous" || k == "concurrent" || k == "throughput" || k == "constant" ||
                 k == "async" || k == "poisson" || k == "sweep",
             "--profile: unknown profile '", k,
             "' (synchronous, concurrent, throughput, constant, poisson, sweep)");
  KILN_CHECK(options.max_concurrency >= 1, "--max-concurrency must be >= 1");
  for (double r : options.rates) KILN_CHECK(r > 0 && std::isfinite(r), "--rate values must be > 0");
  if (k == "concurrent" || k == "constant" || k == "async" || k == "poisson") {
    KILN_CHECK(!options.rates.empty(), "--profile ", k, " needs --rate (",
               k == "concurrent" ? "number of streams" : "requests per second", ")");
  }
  if (k == "concurrent") {
    for (double r : options.rates) {
      KILN_CHECK(r == std::floor(r), "--rate for concurrent is a whole number of streams");
    }
  }
  if (k == "sweep" && !options.rates.empty()) {
    sweep_size_ = static_cast<int64_t>(options.rates.front());
    KILN_CHECK(sweep_size_ >= 2, "--rate for sweep is the number of benchmarks, at least 2");
  }
  KILN_CHECK(options.sweep_strategy == "constant" || options.sweep_strategy == "poisson",
             "the sweep strategy must be constant or poisson");
}

int64_t Profile::planned_count() const {
  if (options_.kind == "sweep") return sweep_size_;
  if (options_.kind == "synchronous" || options_.kind == "throughput") return 1;
  return static_cast<int64_t>(options_.rates.size());
}

Strategy Profile::Make(StrategyKind kind, double rate) const {
  Strategy s;
  s.kind = kind;
  s.rate = rate;
  s.streams = kind == StrategyKind::kConcurrent ? static_cast<int64_t>(rate) : 1;
  s.max_concurrency = options_.max_concurrency;
  s.seed = options_.seed;
  return s;
}

std::optional<Strategy> Profile::Next(const std::vector<double>& measured) {
  const size_t done = measured.size();
  const std::string& k = options_.kind;
  if (k == "synchronous" || k == "throughput") {
    if (done > 0) return std::nullopt;
    return Make(k == "synchronous" ? StrategyKind::kSynchronous : StrategyKind::kThroughput, 0);
  }
  if (k != "sweep") {
    if (done >= options_.rates.size()) return std::nullopt;
    const StrategyKind kind = k == "concurrent" ? StrategyKind::kConcurrent
                              : k == "poisson"  ? StrategyKind::kPoisson
                                                : StrategyKind::kConstant;
    return Make(kind, options_.rates[done]);
  }
  if (done == 0) return Make(StrategyKind::kSynchronous, 0);
  if (done == 1) return Make(StrategyKind::kThroughput, 0);
  if (done == 2) {
    KILN_CHECK(measured[0] > 0 || measured[1] > 0,
               "sweep: neither the synchronous nor the throughput benchmark completed a request; "
               "is the server answering?");
    sweep_rates_ = Linspace(measured[0], measured[1], sweep_size_ - 1);
    sweep_rates_.erase(sweep_rates_.begin());  // synchronous already ran
  }
  const size_t index = done - 2;
  if (index >= sweep_rates_.size() || sweep_rates_[index] <= 0) return std::nullopt;
  const StrategyKind kind =
      options_.sweep_strategy == "poisson" ? StrategyKind::kPoisson : StrategyKind::kConstant;
  return Make(kind, sweep_rates_[index]);
}

}  // namespace kiln::bench
