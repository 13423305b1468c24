// W3C Trace Context (https://www.w3.org/TR/trace-context/): the `traceparent` header a request
// arrives with is continued (same trace id, its span as parent); a malformed one is ignored
// and a new trace starts. Random ids for new traces and spans.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "telemetry/span.h"

namespace kiln::telemetry {

struct TraceContext {
  TraceId trace_id{};
  SpanId parent_span_id{};  // the caller's span
  uint8_t flags = 0;        // bit 0: sampled
  bool sampled() const { return (flags & 1) != 0; }
};

// "00-<32 hex>-<16 hex>-<2 hex>" (lower-case hex; ids not all zero; version ff refused; a
// later version is read by its first four fields). nullopt for anything else.
std::optional<TraceContext> ParseTraceparent(std::string_view header);
// The trace a request belongs to: its `traceparent` (null: none sent) continued when valid
// (`continued` true), else a new sampled trace with no parent.
TraceContext ContinueOrStartTrace(const std::string* traceparent, bool* continued = nullptr);
// "00-<trace id>-<span id>-<flags>", the header a callee gets.
std::string FormatTraceparent(const TraceId& trace_id, const SpanId& span_id, uint8_t flags);

// Random non-zero ids (a per-thread generator seeded from the OS).
TraceId NewTraceId();
SpanId NewSpanId();
// Lower-case hex of an id.
std::string Hex(const TraceId& id);
std::string Hex(const SpanId& id);

}  // namespace kiln::telemetry
