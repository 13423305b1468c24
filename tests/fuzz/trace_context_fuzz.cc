// libFuzzer target for the request headers telemetry/ reads from clients: `traceparent`
// (W3C Trace Context) and `x-request-id`.
// What must hold: no crash; an accepted traceparent has lower-case hex ids that are not all
// zero and formats back to the same ids and flags (and, for version 00, to the header itself,
// whitespace aside); an id RequestIdFor keeps is 1..128 printable ASCII bytes, and one it
// replaces becomes 32 lower-case hex digits.
//
// Run: KILN_FUZZ_TARGETS=trace_context scripts/fuzz.sh
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz_util.h"
#include "telemetry/request_id.h"
#include "telemetry/trace_context.h"

namespace {

bool IsLowerHex(std::string_view s) {
  return s.find_first_not_of("0123456789abcdef") == std::string_view::npos;
}

std::string_view TrimOws(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace kiln::telemetry;
  const std::string input(reinterpret_cast<const char*>(data), size);

  if (const auto c = ParseTraceparent(input)) {
    FUZZ_CHECK(c->trace_id != TraceId{});
    FUZZ_CHECK(c->parent_span_id != SpanId{});
    const std::string formatted = FormatTraceparent(c->trace_id, c->parent_span_id, c->flags);
    FUZZ_CHECK(formatted.size() == 55);
    const auto again = ParseTraceparent(formatted);
    FUZZ_CHECK(again.has_value());
    FUZZ_CHECK(again->trace_id == c->trace_id && again->parent_span_id == c->parent_span_id &&
               again->flags == c->flags);
    const std::string_view trimmed = TrimOws(input);
    // Fields 2-4 as sent are what we formatted; version 00 has nothing else.
    FUZZ_CHECK(trimmed.substr(2, 53) == std::string_view(formatted).substr(2, 53));
    if (trimmed.substr(0, 2) == "00") FUZZ_CHECK(trimmed == formatted);
  }

  const std::string id = RequestIdFor(&input);
  if (id == input) {
    FUZZ_CHECK(IsAcceptableRequestId(id));
    FUZZ_CHECK(!id.empty() && id.size() <= kMaxRequestIdLength);
    for (unsigned char ch : id) FUZZ_CHECK(ch > 0x20 && ch < 0x7f);
  } else {
    FUZZ_CHECK(!IsAcceptableRequestId(input));
    FUZZ_CHECK(id.size() == 32 && IsLowerHex(id));
  }
  return 0;
}
