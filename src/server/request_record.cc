#include "server/request_record.h"

#include <cstdio>

#include "server/server_state.h"
#include "telemetry/request_id.h"
#include "telemetry/span_exporter.h"
#include "util/log.h"

namespace kiln {
namespace {

using telemetry::Attribute;
using telemetry::Span;
using telemetry::SpanKind;
using telemetry::SpanStatus;

constexpr size_t kMaxLoggedBody = 4096;  // --log-prompts: request bodies cut at this length

double Millis(std::chrono::steady_clock::duration d) {
  return std::chrono::duration<double, std::milli>(d).count();
}

bool Happened(RequestRecord::TimePoint t) { return t != RequestRecord::TimePoint(); }

// Level of a request's access line: generation requests and failures at info, the rest
// (health checks, metric scrapes) at debug so probes do not flood the log.
log::Level AccessLevel(bool generation, int status) {
  if (status >= 500) return log::Level::kWarn;
  if (generation || status >= 400) return log::Level::kInfo;
  return log::Level::kDebug;
}

}  // namespace

RequestRecord::RequestRecord(std::shared_ptr<ServerState> state, const http::Request& request,
                             TimePoint arrival)
    : state_(std::move(state)),
      request_id_(telemetry::RequestIdFor(request.Header("x-request-id"))),
      method_(request.method),
      path_(request.path),
      client_(request.client),
      arrival_(arrival),
      clock_(arrival) {
  if (state_->config.log_prompts) body_ = request.body.substr(0, kMaxLoggedBody);
  if (state_->spans == nullptr) return;
  trace_ = telemetry::ContinueOrStartTrace(request.Header("traceparent"));
  span_id_ = telemetry::NewSpanId();
}

RequestRecord::~RequestRecord() {
  // The end is when the answer was decided (the last token, or the status of a complete
  // response), not when the last reference went: a proxy in front sees the response after.
  TimePoint end = generation_summary_ ? generation_summary_->ended : responded_;
  if (!Happened(end)) end = std::chrono::steady_clock::now();
  try {
    WriteAccessLog(end);
    if (state_->spans != nullptr && trace_.sampled()) ExportSpans(end);
  } catch (...) {  // never let a log line take the process down from a destructor
  }
}

void RequestRecord::SetRoute(std::string route, bool generation) {
  route_ = std::move(route);
  generation_ = generation;
}

void RequestRecord::SetStatus(int status) {
  if (status_ != 0) return;
  status_ = status;
  responded_ = std::chrono::steady_clock::now();
}

void RequestRecord::SetGeneration(GenerationSummary summary) {
  generation_summary_ = std::move(summary);
}

void RequestRecord::WriteAccessLog(TimePoint end) const {
  const log::Level level = AccessLevel(generation_, status_);
  if (!log::Enabled(level)) return;
  const std::string& route = route_.empty() ? path_ : route_;
  char message[160];
  std::snprintf(message, sizeof(message), "%s %.100s %d", method_.c_str(), route.c_str(), status_);
  log::Fields f = {{"request_id", std::string_view(request_id_)},
                   {"method", std::string_view(method_)},
                   {"route", std::string_view(route)},
                   {"status", int64_t{status_}},
                   {"client", std::string_view(client_)}};
  std::string trace_id;
  if (state_->spans != nullptr && trace_.sampled()) {
    trace_id = telemetry::Hex(trace_.trace_id);
    f.emplace_back("trace_id", std::string_view(trace_id));
  }
  if (const auto& g = generation_summary_) {
    const RequestTiming& t = g->timing;
    f.emplace_back("model", std::string_view(state_->config.model_id));
    f.emplace_back("prompt_tokens", t.input_tokens);
    f.emplace_back("generated_tokens", t.generated_tokens);
    f.emplace_back("finish_reason", std::string_view(g->finish_reason));
    f.emplace_back("validation_ms", t.validation * 1e3);
    f.emplace_back("queue_ms", t.queue * 1e3);
    f.emplace_back("prefill_ms", t.prefill * 1e3);
    f.emplace_back("decode_ms", t.decode * 1e3);
    f.emplace_back("inference_ms", t.inference * 1e3);
    f.emplace_back("total_ms", t.total * 1e3);
  } else {
    f.emplace_back("total_ms", Millis(end - arrival_));
  }
  if (state_->config.log_prompts && !body_.empty()) f.emplace_back("body", std::string_view(body_));
  log::Write(level, "kiln::access", message, f);
}

void RequestRecord::ExportSpans(TimePoint end) const {
  const std::string& route = route_.empty() ? path_ : route_;
  std::vector<Span> spans;
  Span request;
  request.trace_id = trace_.trace_id;
  request.span_id = span_id_;
  request.parent_span_id = trace_.parent_span_id;
  request.name = method_ + " " + route;
  request.kind = SpanKind::kServer;
  request.start_unix_nanos = clock_.UnixNanos(arrival_);
  request.end_unix_nanos = clock_.UnixNanos(end);
  request.attributes = {{"http.request.method", method_},
                        {"http.route", route},
                        {"url.path", path_},
                        {"http.response.status_code", int64_t{status_}},
                        {"client.address", client_},
                        {"kiln.request_id", request_id_}};
  if (status_ >= 500) request.status = SpanStatus::kError;
  if (const auto& g = generation_summary_) {
    const RequestTiming& t = g->timing;
    auto& a = request.attributes;
    a.push_back({"gen_ai.request.model", state_->config.model_id});
    a.push_back({"gen_ai.usage.input_tokens", t.input_tokens});
    a.push_back({"gen_ai.usage.output_tokens", t.generated_tokens});
    a.push_back({"gen_ai.response.finish_reasons", g->finish_reason});
    // TGI's span fields for the same figures.
    a.push_back({"total_time", t.total});
    a.push_back({"validation_time", t.validation});
    a.push_back({"queue_time", t.queue});
    a.push_back({"inference_time", t.inference});
    if (t.generated_tokens > 0) a.push_back({"time_per_token", t.inference / t.generated_tokens});
    for (const Attribute& p : g->parameters) a.push_back(p);
    if (g->finish_reason == "error") request.status = SpanStatus::kError;
    const auto child = [&](const char* name, TimePoint from, TimePoint to) {
      if (!Happened(from) || !Happened(to) || to < from) return;
      Span s;
      s.trace_id = trace_.trace_id;
      s.span_id = telemetry::NewSpanId();
      s.parent_span_id = span_id_;
      s.name = name;
      s.start_unix_nanos = clock_.UnixNanos(from);
      s.end_unix_nanos = clock_.UnixNanos(to);
      spans.push_back(std::move(s));
    };
    child("validation", arrival_, g->submitted);
    child("queue", g->submitted, g->scheduled);
    child("prefill", g->scheduled, g->first_token);
    child("decode", g->first_token, g->last_token);
  }
  spans.insert(spans.begin(), std::move(request));
  state_->spans->Export(std::move(spans));
}

}  // namespace kiln
