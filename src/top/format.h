// Short human units for the monitor's columns: 1.2 GiB, 3h04m, 12.3 ms.
#pragma once

#include <cstdint>
#include <string>

namespace kiln::top {

std::string FormatBytes(int64_t bytes);
std::string FormatUptime(double seconds);
// Seconds shown as ms (or s above 10 s); "-" when `count` says there were no samples.
std::string FormatLatency(double seconds, int64_t count);
// "[#####.....]" of `width` cells for a 0-100 percentage.
std::string Bar(double pct, int width);

}  // namespace kiln::top
