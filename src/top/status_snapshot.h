// One poll of a Kiln server's GET /v1/status (server/status_route.cc), parsed into the fields
// `kiln top` shows. Counters are cumulative; top/rates.h turns two snapshots into rates.
#pragma once

#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kiln::top {

struct CoreSample {
  int id = -1;  // -1: an unpinned compute pool
  double cpu_seconds = 0.0;
};

struct Quantiles {
  double p50 = 0.0, p95 = 0.0;  // seconds
  int64_t count = 0;
};

struct StatusSnapshot {
  std::string model, version;
  double uptime_s = 0.0;
  bool draining = false;
  std::vector<CoreSample> cores;
  int64_t rss_bytes = 0, weight_bytes = 0;
  int64_t kv_total = 0, kv_used = 0, kv_free = 0, kv_cached = 0;
  int64_t running = 0, waiting = 0;
  int64_t prompt_tokens = 0, generated_tokens = 0;
  int64_t requests = 0, generation_requests = 0, in_flight = 0;
  int64_t status_4xx = 0, status_5xx = 0, status_429 = 0;
  double latency_window_s = 0.0;
  Quantiles ttft, itl;
};

// A parsed snapshot, or why the body is not one (`error`, for the screen).
struct ParsedStatus {
  std::optional<StatusSnapshot> snapshot;
  std::string error;
};

// `body` of a 200 answer to GET /v1/status. Anything that is not a JSON object with
// "object": "kiln.status" is refused with a message saying so.
ParsedStatus ParseStatus(std::string_view body);
ParsedStatus ParseStatusJson(const nlohmann::json& j);

// One replica of a `kiln launch` router's /v1/status ("object": "kiln.router_status"): its
// own document with the router's index, port and state added.
struct ReplicaStatus {
  int index = 0;
  int port = 0;
  std::string state;  // the router's view: starting, ready, unhealthy, ...
  ParsedStatus status;
};

// A single server's document: one entry with index -1. A router's: one per replica.
// Otherwise: one entry whose status says why it is not Kiln.
std::vector<ReplicaStatus> ParseStatusDocument(std::string_view body);

}  // namespace kiln::top
