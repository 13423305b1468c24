// The router's record of one proxied request: its request id (the client's x-request-id when
// acceptable, else a new one) and trace (the client's traceparent continued, else a new
// trace), the headers that carry both to the replica, and when the call ends one access-log
// line and its spans: the router's SERVER span around the whole call and one CLIENT span per
// replica attempt, the replica's own spans being children of the attempt that reached it.
// Loop thread only.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "http/http_types.h"
#include "telemetry/span.h"
#include "telemetry/span_exporter.h"
#include "telemetry/trace_context.h"
#include "telemetry/wall_clock.h"

namespace kiln {

class CallTrace {
 public:
  using Clock = std::chrono::steady_clock;

  // `spans`: the router's exporter, or null (no --otlp-endpoint).
  CallTrace(const http::Request& request, Clock::time_point arrival,
            telemetry::SpanExporter* spans);

  const std::string& request_id() const { return request_id_; }
  // An attempt on replica `index` starts now: the x-request-id and traceparent it is sent with.
  http::Headers BeginAttempt(int index);
  // The attempt ended with `status` (0: no response: the connection failed).
  void EndAttempt(int status);
  // The call answered the client with `status` (0: the client left first), after `attempts`
  // tries, the last on `replica` (-1: none). Writes the access line and exports the spans.
  void Finish(int status, int replica, int attempts);

 private:
  struct Attempt {
    int replica = -1;
    telemetry::SpanId span_id{};
    Clock::time_point start, end;
    int status = 0;
  };
  void ExportSpans(Clock::time_point end, int status, int replica) const;

  std::string request_id_, method_, path_, client_;
  Clock::time_point arrival_;
  telemetry::WallClock clock_;  // span times
  telemetry::SpanExporter* spans_;
  bool continued_ = false;  // the client sent a valid traceparent
  telemetry::TraceContext trace_;
  telemetry::SpanId span_id_{};
  std::vector<Attempt> attempts_;
  bool finished_ = false;
};

}  // namespace kiln
