// kiln top --once --json: the same snapshot as the plain report, for scripts.
#include <nlohmann/json.hpp>

#include "top/report.h"

namespace kiln::top {
namespace {

using nlohmann::json;

json SnapshotJson(const StatusSnapshot& s) {
  json cores = json::array();
  for (const CoreSample& c : s.cores)
    cores.push_back({{"id", c.id}, {"cpu_seconds", c.cpu_seconds}});
  return {{"model", s.model},
          {"version", s.version},
          {"uptime_s", s.uptime_s},
          {"draining", s.draining},
          {"cores", cores},
          {"rss_bytes", s.rss_bytes},
          {"weight_bytes", s.weight_bytes},
          {"kv_cache",
           {{"blocks_total", s.kv_total},
            {"blocks_used", s.kv_used},
            {"blocks_free", s.kv_free},
            {"blocks_cached", s.kv_cached}}},
          {"running", s.running},
          {"waiting", s.waiting},
          {"prompt_tokens", s.prompt_tokens},
          {"generated_tokens", s.generated_tokens},
          {"requests",
           {{"total", s.requests},
            {"generation", s.generation_requests},
            {"in_flight", s.in_flight},
            {"status_4xx", s.status_4xx},
            {"status_5xx", s.status_5xx},
            {"status_429", s.status_429}}},
          {"ttft_s", {{"p50", s.ttft.p50}, {"p95", s.ttft.p95}, {"count", s.ttft.count}}},
          {"itl_s", {{"p50", s.itl.p50}, {"p95", s.itl.p95}, {"count", s.itl.count}}}};
}

json RatesJson(const Rates& r) {
  if (!r.valid) return nullptr;
  return {{"seconds", r.seconds},
          {"generated_tokens_per_s", r.generated_tokens_per_s},
          {"prompt_tokens_per_s", r.prompt_tokens_per_s},
          {"requests_per_s", r.requests_per_s},
          {"core_utilization_pct", r.core_utilization_pct}};
}

json TargetJson(const TargetView& t) {
  json j = {{"url", t.url}, {"state", HealthName(t.health)}};
  if (!t.error.empty()) j["error"] = t.error;
  if (t.health == Health::kUp && t.current) {
    j["status"] = SnapshotJson(*t.current);
    j["rates"] = RatesJson(t.rates);
  }
  return j;
}

}  // namespace

nlohmann::json JsonReport(const HostInfo& h, const std::vector<TargetView>& targets) {
  json list = json::array();
  for (const TargetView& t : targets) list.push_back(TargetJson(t));
  return {{"host",
           {{"cpu_model", h.cpu_model},
            {"cpus", h.cpus},
            {"mem_total_bytes", h.mem_total_bytes},
            {"mem_available_bytes", h.mem_available_bytes},
            {"load", {h.load1, h.load5, h.load15}}}},
          {"targets", list}};
}

}  // namespace kiln::top
