#include "router/call_trace.h"

#include <cstdio>

#include "telemetry/request_id.h"
#include "util/log.h"

namespace kiln {
namespace {

using telemetry::Span;
using telemetry::SpanKind;
using telemetry::SpanStatus;

constexpr size_t kMaxAttemptsTraced = 16;  // retries are bounded; so are their spans

}  // namespace

CallTrace::CallTrace(const http::Request& request, Clock::time_point arrival,
                     telemetry::SpanExporter* spans)
    : request_id_(telemetry::RequestIdFor(request.Header("x-request-id"))),
      method_(request.method),
      path_(request.path),
      client_(request.client),
      arrival_(arrival),
      clock_(arrival),
      spans_(spans),
      trace_(telemetry::ContinueOrStartTrace(request.Header("traceparent"), &continued_)) {
  span_id_ = telemetry::NewSpanId();
}

http::Headers CallTrace::BeginAttempt(int index) {
  http::Headers h = {{"x-request-id", request_id_}};
  if (spans_ == nullptr) {
    // Not tracing here: the client's trace passes through as it came; none is made up.
    if (continued_) {
      h.emplace_back("traceparent", telemetry::FormatTraceparent(
                                        trace_.trace_id, trace_.parent_span_id, trace_.flags));
    }
    return h;
  }
  Attempt a;
  a.replica = index;
  a.span_id = telemetry::NewSpanId();
  a.start = Clock::now();
  h.emplace_back("traceparent",
                 telemetry::FormatTraceparent(trace_.trace_id, a.span_id, trace_.flags));
  if (attempts_.size() < kMaxAttemptsTraced) attempts_.push_back(a);
  return h;
}

void CallTrace::EndAttempt(int status) {
  if (attempts_.empty() || attempts_.back().end != Clock::time_point()) return;
  attempts_.back().end = Clock::now();
  attempts_.back().status = status;
}

void CallTrace::Finish(int status, int replica, int attempts) {
  if (finished_) return;
  finished_ = true;
  const Clock::time_point end = Clock::now();
  EndAttempt(0);
  const log::Level level = status >= 500 ? log::Level::kWarn : log::Level::kInfo;
  if (log::Enabled(level)) {
    char message[160];
    std::snprintf(message, sizeof(message), "%s %.100s %d", method_.c_str(), path_.c_str(),
                  status);
    log::Fields f = {{"request_id", std::string_view(request_id_)},
                     {"method", std::string_view(method_)},
                     {"route", std::string_view(path_)},
                     {"status", int64_t{status}},
                     {"client", std::string_view(client_)},
                     {"replica", int64_t{replica}},
                     {"attempts", int64_t{attempts}},
                     {"total_ms", std::chrono::duration<double, std::milli>(end - arrival_).count()}};
    std::string trace_id;
    if (spans_ != nullptr && trace_.sampled()) {
      trace_id = telemetry::Hex(trace_.trace_id);
      f.emplace_back("trace_id", std::string_view(trace_id));
    }
    log::Write(level, "kiln::router", message, f);
  }
  if (spans_ != nullptr && trace_.sampled()) ExportSpans(end, status, replica);
}

void CallTrace::ExportSpans(Clock::time_point end, int status, int replica) const {
  std::vector<Span> out;
  Span call;
  call.trace_id = trace_.trace_id;
  call.span_id = span_id_;
  call.parent_span_id = trace_.parent_span_id;
  call.name = "router " + method_ + " " + path_;
  call.kind = SpanKind::kServer;
  call.start_unix_nanos = clock_.UnixNanos(arrival_);
  call.end_unix_nanos = clock_.UnixNanos(end);
  call.attributes = {{"http.request.method", method_},
                     {"url.path", path_},
                     {"http.response.status_code", int64_t{status}},
                     {"client.address", client_},
                     {"kiln.request_id", request_id_},
                     {"kiln.replica", int64_t{replica}},
                     {"kiln.attempts", static_cast<int64_t>(attempts_.size())}};
  if (status >= 500 || status == 0) call.status = SpanStatus::kError;
  out.push_back(std::move(call));
  for (const Attempt& a : attempts_) {
    Span s;
    s.trace_id = trace_.trace_id;
    s.span_id = a.span_id;
    s.parent_span_id = span_id_;
    s.name = "replica " + std::to_string(a.replica);
    s.kind = SpanKind::kClient;
    s.start_unix_nanos = clock_.UnixNanos(a.start);
    s.end_unix_nanos = clock_.UnixNanos(a.end == Clock::time_point() ? end : a.end);
    s.attributes = {{"kiln.replica", int64_t{a.replica}},
                    {"http.response.status_code", int64_t{a.status}}};
    if (a.status == 0 || a.status >= 500) s.status = SpanStatus::kError;
    out.push_back(std::move(s));
  }
  spans_->Export(std::move(out));
}

}  // namespace kiln
