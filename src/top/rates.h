// Rates between two successive /v1/status snapshots of one server: tokens/s, requests/s and
// each core's utilization. The time base is the server's own uptime (not the poll times), so
// network jitter in the polls does not show as load.
#pragma once

#include <vector>

#include "top/status_snapshot.h"

namespace kiln::top {

struct Rates {
  bool valid = false;  // false: first poll, or the server restarted in between
  double seconds = 0.0;
  double generated_tokens_per_s = 0.0;
  double prompt_tokens_per_s = 0.0;
  double requests_per_s = 0.0;
  // Per core of `cur`, in its order: CPU time over wall time, 0-100.
  std::vector<double> core_utilization_pct;
};

Rates ComputeRates(const StatusSnapshot& prev, const StatusSnapshot& cur);

// CPU seconds used over `wall_seconds`, as a percentage clamped to [0, 100] (a thread cannot
// use more than its core; clock granularity can make it read slightly above).
double UtilizationPct(double cpu_seconds_delta, double wall_seconds);

}  // namespace kiln::top
