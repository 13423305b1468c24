#include "top/format.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace kiln::top {

std::string FormatBytes(int64_t bytes) {
  static const char* const kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  int unit = 0;
  while (v >= 1024.0 && unit < 4) {
    v /= 1024.0;
    ++unit;
  }
  char buf[32];
  std::snprintf(buf, sizeof(buf), unit == 0 ? "%.0f %s" : "%.1f %s", v, kUnits[unit]);
  return buf;
}

std::string FormatUptime(double seconds) {
  const int64_t s = static_cast<int64_t>(std::max(0.0, seconds));
  char buf[32];
  if (s < 60) {
    std::snprintf(buf, sizeof(buf), "%llds", static_cast<long long>(s));
  } else if (s < 3600) {
    std::snprintf(buf, sizeof(buf), "%lldm%02llds", static_cast<long long>(s / 60),
                  static_cast<long long>(s % 60));
  } else {
    std::snprintf(buf, sizeof(buf), "%lldh%02lldm", static_cast<long long>(s / 3600),
                  static_cast<long long>(s / 60 % 60));
  }
  return buf;
}

std::string FormatLatency(double seconds, int64_t count) {
  if (count <= 0) return "-";
  char buf[32];
  if (seconds >= 10.0) {
    std::snprintf(buf, sizeof(buf), "%.1f s", seconds);
  } else {
    std::snprintf(buf, sizeof(buf), "%.1f ms", seconds * 1e3);
  }
  return buf;
}

std::string Bar(double pct, int width) {
  const int filled =
      std::clamp(static_cast<int>(std::lround(pct / 100.0 * width)), 0, std::max(0, width));
  return "[" + std::string(static_cast<size_t>(filled), '#') +
         std::string(static_cast<size_t>(std::max(0, width - filled)), '.') + "]";
}

}  // namespace kiln::top
