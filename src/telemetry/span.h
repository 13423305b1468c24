// One finished span, as the OTLP exporter sends it: ids, name, kind, wall-clock start and end,
// attributes and status. Built by the server and the router when a request ends.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <variant>
#include <vector>

namespace kiln::telemetry {

using TraceId = std::array<uint8_t, 16>;  // all zero: none
using SpanId = std::array<uint8_t, 8>;    // all zero: none

using AttributeValue = std::variant<std::string, int64_t, double, bool>;

struct Attribute {
  std::string key;
  AttributeValue value;
};

// OTLP's Span.SpanKind values.
enum class SpanKind { kInternal = 1, kServer = 2, kClient = 3 };
// OTLP's Status.StatusCode values.
enum class SpanStatus { kUnset = 0, kOk = 1, kError = 2 };

struct Span {
  TraceId trace_id{};
  SpanId span_id{};
  SpanId parent_span_id{};  // zero for a root span
  std::string name;
  SpanKind kind = SpanKind::kInternal;
  uint64_t start_unix_nanos = 0;
  uint64_t end_unix_nanos = 0;
  std::vector<Attribute> attributes;
  SpanStatus status = SpanStatus::kUnset;
  std::string status_message;  // with kError
};

}  // namespace kiln::telemetry
