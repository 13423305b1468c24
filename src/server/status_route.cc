// GET /v1/status: one JSON document with everything `kiln top` shows, built from counters the
// server keeps anyway (no engine round trip: EngineStats is a copy under the engine's lock).
// Cumulative values only (CPU seconds, token and request counts): the client turns two polls
// into rates, so any number of monitors can poll without the server keeping state for them.
#include <chrono>

#include "api/json_output.h"
#include "server/routes.h"
#include "util/process_memory.h"

namespace kiln {
namespace {

constexpr auto kLatencyWindow = std::chrono::seconds(60);

nlohmann::json CoresJson(const EngineStats& e) {
  nlohmann::json cores = nlohmann::json::array();
  for (size_t i = 0; i < e.core_cpu_seconds.size(); ++i) {
    const int id = i < e.cores.size() ? e.cores[i] : -1;  // -1: an unpinned pool
    cores.push_back({{"id", id}, {"cpu_seconds", e.core_cpu_seconds[i]}});
  }
  return cores;
}

nlohmann::json QuantilesJson(const WindowQuantiles& q) {
  return {{"p50", q.p50}, {"p95", q.p95}, {"count", q.count}};
}

nlohmann::json StatusJson(const ServerState& s, const EngineStats& e, const StatusCounts& c) {
  const double uptime =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - s.started).count();
  const int64_t free_blocks = e.kv_blocks_total - e.kv_blocks_used;
  return {
      {"object", "kiln.status"},
      {"model", s.config.model_id},
      {"version", s.config.version},
      {"uptime_s", uptime},
      {"draining", s.draining.load()},
      {"cores", CoresJson(e)},
      {"memory", {{"rss_bytes", ResidentBytes()}, {"weight_bytes", s.config.weight_bytes}}},
      {"kv_cache",
       {{"blocks_total", e.kv_blocks_total},
        {"blocks_used", e.kv_blocks_used},
        {"blocks_free", free_blocks},
        {"blocks_cached", e.kv_blocks_cached}}},
      {"sequences", {{"running", e.running}, {"waiting", e.queued}}},
      {"tokens", {{"prompt", e.prompt_tokens}, {"generated", e.generated_tokens}}},
      {"speculation",
       {{"speculate", e.speculate},
        {"drafted", e.speculation.draft_tokens},
        {"accepted", e.speculation.accepted_tokens}}},
      {"requests",
       {{"total", c.responses},
        {"generation", c.generation_requests},
        {"in_flight", s.admission.in_flight()},
        {"status_4xx", c.status_4xx},
        {"status_5xx", c.status_5xx},
        {"status_429", c.status_429}}},
      {"latency",
       {{"window_s", std::chrono::duration<double>(kLatencyWindow).count()},
        {"ttft_s", QuantilesJson(c.ttft)},
        {"itl_s", QuantilesJson(c.itl)}}},
  };
}

}  // namespace

void HandleStatus(RouteContext& ctx) {
  ServerState& s = ctx.state;
  const EngineStats engine = BackendStats(s);
  RespondJson(ctx.reply, 200,
              api::DumpJson(StatusJson(s, engine, s.metrics.Counts(kLatencyWindow))));
}

}  // namespace kiln
