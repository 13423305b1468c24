#include "top/rates.h"

#include <algorithm>

namespace kiln::top {
namespace {

double PerSecond(int64_t before, int64_t after, double seconds) {
  return after >= before ? static_cast<double>(after - before) / seconds : 0.0;
}

}  // namespace

double UtilizationPct(double cpu_seconds_delta, double wall_seconds) {
  if (wall_seconds <= 0.0) return 0.0;
  return std::clamp(100.0 * cpu_seconds_delta / wall_seconds, 0.0, 100.0);
}

Rates ComputeRates(const StatusSnapshot& prev, const StatusSnapshot& cur) {
  Rates r;
  r.seconds = cur.uptime_s - prev.uptime_s;
  // A smaller uptime is a new process: its counters started again.
  if (r.seconds <= 0.0) return r;
  r.valid = true;
  r.generated_tokens_per_s = PerSecond(prev.generated_tokens, cur.generated_tokens, r.seconds);
  r.prompt_tokens_per_s = PerSecond(prev.prompt_tokens, cur.prompt_tokens, r.seconds);
  r.requests_per_s = PerSecond(prev.generation_requests, cur.generation_requests, r.seconds);
  r.core_utilization_pct.reserve(cur.cores.size());
  for (size_t i = 0; i < cur.cores.size(); ++i) {
    // Matched by position, and by id when the pool changed shape (a different process).
    const bool same = i < prev.cores.size() && prev.cores[i].id == cur.cores[i].id;
    const double before = same ? prev.cores[i].cpu_seconds : cur.cores[i].cpu_seconds;
    r.core_utilization_pct.push_back(UtilizationPct(cur.cores[i].cpu_seconds - before, r.seconds));
  }
  return r;
}

}  // namespace kiln::top
