// What one request leaves behind when it ends: one access-log line (text or JSON, per
// util/log.h) and, with --otlp-endpoint, its spans (request, and for generation routes
// validation, queue, prefill and decode as children). Shared by every copy of the request's
// Reply; the last copy to go (the route returning, or its GenerationCall ending) writes it, so
// each request is recorded exactly once, whichever way it ended.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "http/http_types.h"
#include "server/metrics.h"
#include "telemetry/span.h"
#include "telemetry/trace_context.h"
#include "telemetry/wall_clock.h"

namespace kiln {

struct ServerState;

// What a generation route adds to its record when it ends.
struct GenerationSummary {
  using TimePoint = std::chrono::steady_clock::time_point;
  RequestTiming timing;
  TimePoint submitted, scheduled, first_token, last_token;  // zero: did not happen
  TimePoint ended;  // the last choice finished (or the client left): the request span's end
  std::string finish_reason;  // of the first choice; "cancelled" when the client left
  std::vector<telemetry::Attribute> parameters;  // the request's sampling parameters
};

class RequestRecord {
 public:
  using TimePoint = std::chrono::steady_clock::time_point;

  // Reads the request's x-request-id (kept when acceptable, else replaced) and traceparent
  // (continued when valid, else a new trace).
  RequestRecord(std::shared_ptr<ServerState> state, const http::Request& request,
                TimePoint arrival);
  ~RequestRecord();
  RequestRecord(const RequestRecord&) = delete;
  RequestRecord& operator=(const RequestRecord&) = delete;

  const std::string& request_id() const { return request_id_; }
  // The matched route ("/generate"); unset: the path as sent (a 404).
  void SetRoute(std::string route, bool generation);
  // The response's status; the first one counts (a stream that fails later keeps its 200).
  void SetStatus(int status);
  void SetGeneration(GenerationSummary summary);

 private:
  void WriteAccessLog(TimePoint end) const;
  void ExportSpans(TimePoint end) const;

  std::shared_ptr<ServerState> state_;
  std::string request_id_, method_, path_, route_, client_, body_;
  bool generation_ = false;
  int status_ = 0;
  TimePoint responded_{};  // when the status was set
  const TimePoint arrival_;
  const telemetry::WallClock clock_;  // span times
  std::optional<GenerationSummary> generation_summary_;
  telemetry::TraceContext trace_;  // trace id, the caller's span (zero: a new trace), flags
  telemetry::SpanId span_id_{};    // this request's span
};

}  // namespace kiln
