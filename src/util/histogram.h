// A Prometheus histogram (cumulative buckets, sum, count), safe to observe from any thread.
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

namespace kiln {

class Histogram {
 public:
  explicit Histogram(std::vector<double> upper_bounds);

  // TGI's duration buckets: 35 geometric buckets from 0.00015 s, factor 1.5.
  static std::vector<double> DurationBuckets();
  // Geometric buckets from `first`, factor 1.5, `count` of them (finer than TGI's at the low
  // end: the router's own latency is microseconds).
  static std::vector<double> GeometricBuckets(double first, int count);
  // `count` linear buckets of width max / count, up to `max`.
  static std::vector<double> LinearBuckets(double max, int count);

  void Observe(double value);
  // Appends the HELP and TYPE lines and the bucket, sum and count samples.
  void Render(std::string& out, std::string_view name, std::string_view help) const;

 private:
  std::vector<double> bounds_;
  mutable std::mutex mu_;
  std::vector<uint64_t> counts_;  // per bucket, not cumulative; last is +Inf
  double sum_ = 0.0;
  uint64_t count_ = 0;
};

}  // namespace kiln
