#include "util/core_set.h"

#include <sched.h>

#include <algorithm>
#include <charconv>

#include "util/error.h"

namespace kiln {
namespace {

constexpr int kMaxCore = 4095;

int ParseCoreId(std::string_view text, std::string_view spec) {
  int value = -1;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  KILN_CHECK(ec == std::errc() && ptr == text.data() + text.size() && value >= 0 &&
                 value <= kMaxCore,
             "invalid core set '", std::string(spec), "': '", std::string(text),
             "' is not a core id in 0..", kMaxCore);
  return value;
}

}  // namespace

std::vector<int> ParseCoreSet(std::string_view spec) {
  std::vector<int> cores;
  KILN_CHECK(!spec.empty(), "invalid core set: empty");
  size_t start = 0;
  while (start <= spec.size()) {
    size_t comma = spec.find(',', start);
    if (comma == std::string_view::npos) comma = spec.size();
    std::string_view item = spec.substr(start, comma - start);
    size_t dash = item.find('-');
    if (dash == std::string_view::npos) {
      cores.push_back(ParseCoreId(item, spec));
    } else {
      int lo = ParseCoreId(item.substr(0, dash), spec);
      int hi = ParseCoreId(item.substr(dash + 1), spec);
      KILN_CHECK(lo <= hi, "invalid core set '", std::string(spec), "': range ", lo, "-", hi,
                 " is reversed");
      for (int c = lo; c <= hi; ++c) cores.push_back(c);
    }
    start = comma + 1;
  }
  std::sort(cores.begin(), cores.end());
  cores.erase(std::unique(cores.begin(), cores.end()), cores.end());
  return cores;
}

std::vector<int> AllowedCores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> cores;
  if (sched_getaffinity(0, sizeof(set), &set) == 0) {
    for (int c = 0; c < CPU_SETSIZE; ++c) {
      if (CPU_ISSET(c, &set)) cores.push_back(c);
    }
  }
  if (cores.empty()) cores.push_back(0);
  return cores;
}

std::string FormatCoreSet(const std::vector<int>& cores) {
  std::string out;
  for (size_t i = 0; i < cores.size();) {
    size_t j = i;
    while (j + 1 < cores.size() && cores[j + 1] == cores[j] + 1) ++j;
    if (!out.empty()) out += ',';
    out += std::to_string(cores[i]);
    if (j > i) {
      out += '-';
      out += std::to_string(cores[j]);
    }
    i = j + 1;
  }
  return out;
}

}  // namespace kiln
