#include "util/histogram.h"

#include <algorithm>
#include <cstdio>

namespace kiln {
namespace {

std::string FormatDouble(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.6g", v);
  return buf;
}

}  // namespace

Histogram::Histogram(std::vector<double> upper_bounds)
    : bounds_(std::move(upper_bounds)), counts_(bounds_.size() + 1, 0) {}

std::vector<double> Histogram::DurationBuckets() { return GeometricBuckets(0.00015, 35); }

std::vector<double> Histogram::GeometricBuckets(double first, int count) {
  std::vector<double> b;
  double v = first;
  for (int i = 0; i < count; ++i, v *= 1.5) b.push_back(v);
  return b;
}

std::vector<double> Histogram::LinearBuckets(double max, int count) {
  std::vector<double> b;
  const double step = std::max(1.0, max / count);
  for (int i = 1; i <= count; ++i) b.push_back(step * i);
  b.erase(std::unique(b.begin(), b.end()), b.end());
  return b;
}

void Histogram::Observe(double value) {
  const size_t i = std::lower_bound(bounds_.begin(), bounds_.end(), value) - bounds_.begin();
  std::lock_guard<std::mutex> lock(mu_);
  ++counts_[i];
  sum_ += value;
  ++count_;
}

void Histogram::Render(std::string& out, std::string_view name, std::string_view help) const {
  std::vector<uint64_t> counts;
  double sum;
  uint64_t count;
  {
    std::lock_guard<std::mutex> lock(mu_);
    counts = counts_;
    sum = sum_;
    count = count_;
  }
  const std::string n(name);
  out += "# HELP " + n + " " + std::string(help) + "\n# TYPE " + n + " histogram\n";
  uint64_t cumulative = 0;
  for (size_t i = 0; i < bounds_.size(); ++i) {
    cumulative += counts[i];
    out +=
        n + "_bucket{le=\"" + FormatDouble(bounds_[i]) + "\"} " + std::to_string(cumulative) + "\n";
  }
  out += n + "_bucket{le=\"+Inf\"} " + std::to_string(count) + "\n";
  out += n + "_sum " + FormatDouble(sum) + "\n";
  out += n + "_count " + std::to_string(count) + "\n";
}

}  // namespace kiln
