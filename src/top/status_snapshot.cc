#include "top/status_snapshot.h"

#include <nlohmann/json.hpp>

namespace kiln::top {
namespace {

using nlohmann::json;

// A missing or mistyped member reads as its default: an older or newer server still shows
// what it has.
template <typename T>
T Get(const json& j, const char* key, T fallback = T{}) {
  if (!j.is_object()) return fallback;
  const auto it = j.find(key);
  if (it == j.end() || it->is_null()) return fallback;
  if constexpr (std::is_same_v<T, std::string>) {
    return it->is_string() ? it->template get<std::string>() : fallback;
  } else if constexpr (std::is_same_v<T, bool>) {
    return it->is_boolean() ? it->template get<bool>() : fallback;
  } else {
    return it->is_number() ? it->template get<T>() : fallback;
  }
}

const json& Member(const json& j, const char* key) {
  static const json kNull;
  if (!j.is_object()) return kNull;
  const auto it = j.find(key);
  return it == j.end() ? kNull : *it;
}

Quantiles ParseQuantiles(const json& j) {
  return {Get<double>(j, "p50"), Get<double>(j, "p95"), Get<int64_t>(j, "count")};
}

std::vector<CoreSample> ParseCores(const json& j) {
  std::vector<CoreSample> cores;
  if (!j.is_array()) return cores;
  for (const json& c : j) cores.push_back({Get<int>(c, "id", -1), Get<double>(c, "cpu_seconds")});
  return cores;
}

StatusSnapshot ParseFields(const json& j) {
  StatusSnapshot s;
  s.model = Get<std::string>(j, "model");
  s.version = Get<std::string>(j, "version");
  s.uptime_s = Get<double>(j, "uptime_s");
  s.draining = Get<bool>(j, "draining");
  s.cores = ParseCores(Member(j, "cores"));
  const json& mem = Member(j, "memory");
  s.rss_bytes = Get<int64_t>(mem, "rss_bytes");
  s.weight_bytes = Get<int64_t>(mem, "weight_bytes");
  const json& kv = Member(j, "kv_cache");
  s.kv_total = Get<int64_t>(kv, "blocks_total");
  s.kv_used = Get<int64_t>(kv, "blocks_used");
  s.kv_free = Get<int64_t>(kv, "blocks_free");
  s.kv_cached = Get<int64_t>(kv, "blocks_cached");
  const json& seqs = Member(j, "sequences");
  s.running = Get<int64_t>(seqs, "running");
  s.waiting = Get<int64_t>(seqs, "waiting");
  const json& tokens = Member(j, "tokens");
  s.prompt_tokens = Get<int64_t>(tokens, "prompt");
  s.generated_tokens = Get<int64_t>(tokens, "generated");
  const json& req = Member(j, "requests");
  s.requests = Get<int64_t>(req, "total");
  s.generation_requests = Get<int64_t>(req, "generation");
  s.in_flight = Get<int64_t>(req, "in_flight");
  s.status_4xx = Get<int64_t>(req, "status_4xx");
  s.status_5xx = Get<int64_t>(req, "status_5xx");
  s.status_429 = Get<int64_t>(req, "status_429");
  const json& lat = Member(j, "latency");
  s.latency_window_s = Get<double>(lat, "window_s");
  s.ttft = ParseQuantiles(Member(lat, "ttft_s"));
  s.itl = ParseQuantiles(Member(lat, "itl_s"));
  return s;
}

}  // namespace

ParsedStatus ParseStatusJson(const json& j) {
  if (!j.is_object() || Get<std::string>(j, "object") != "kiln.status") {
    return {std::nullopt, "not a Kiln server: /v1/status is not a kiln.status document"};
  }
  return {ParseFields(j), ""};
}

std::vector<ReplicaStatus> ParseStatusDocument(std::string_view body) {
  const json j = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded())
    return {{-1, 0, "", {std::nullopt, "not a Kiln server: /v1/status is not JSON"}}};
  if (Get<std::string>(j, "object") != "kiln.router_status") {
    return {{-1, 0, "", ParseStatusJson(j)}};
  }
  std::vector<ReplicaStatus> out;
  const json& replicas = Member(j, "replicas");
  if (!replicas.is_array()) return out;
  for (const json& r : replicas) {
    ReplicaStatus rs{Get<int>(r, "index"),
                     Get<int>(r, "port"),
                     Get<std::string>(r, "state"),
                     {std::nullopt, ""}};
    // A replica that did not answer has only the router's fields.
    if (r.contains("object")) {
      rs.status = ParseStatusJson(r);
    } else {
      rs.status.error = "replica " + rs.state + ", no status";
    }
    out.push_back(std::move(rs));
  }
  return out;
}

ParsedStatus ParseStatus(std::string_view body) {
  const json j = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return {std::nullopt, "not a Kiln server: /v1/status is not JSON"};
  return ParseStatusJson(j);
}

}  // namespace kiln::top
