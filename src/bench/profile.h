// A profile is the sequence of benchmarks a run makes (GuideLLM's profiles): one strategy per
// benchmark; sweep chooses its rates from what the first two measured.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "bench/strategy.h"

namespace kiln::bench {

struct ProfileOptions {
  std::string kind = "sweep";  // synchronous|concurrent|throughput|constant|poisson|sweep
  std::vector<double> rates;   // rates (constant, poisson), streams (concurrent), size (sweep)
  int64_t max_concurrency = 10240;
  uint64_t seed = 42;
  std::string sweep_strategy = "constant";  // kind of the sweep's interpolated benchmarks
};

class Profile {
 public:
  // Throws kiln::Error on an unknown kind or missing/invalid rates.
  explicit Profile(const ProfileOptions& options);

  // The next benchmark's strategy, given the successful requests/s measured by each benchmark
  // run so far; nullopt when the profile is complete. A sweep runs synchronous, throughput, then
  // the rates of numpy.linspace(sync_rate, throughput_rate, size - 1)[1:] (GuideLLM's
  // profiles/sweep.py; size 10 unless --rate gives it).
  std::optional<Strategy> Next(const std::vector<double>& measured_rates);

  // How many benchmarks the profile will run.
  int64_t planned_count() const;
  const ProfileOptions& options() const { return options_; }

 private:
  Strategy Make(StrategyKind kind, double rate) const;

  ProfileOptions options_;
  int64_t sweep_size_ = 10;
  std::vector<double> sweep_rates_;
};

// numpy.linspace(start, stop, num): `num` evenly spaced values, both ends included.
std::vector<double> Linspace(double start, double stop, int64_t num);

}  // namespace kiln::bench
