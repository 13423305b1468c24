#include "telemetry/request_id.h"

#include "telemetry/trace_context.h"

namespace kiln::telemetry {

bool IsAcceptableRequestId(std::string_view id) {
  if (id.empty() || id.size() > kMaxRequestIdLength) return false;
  for (unsigned char c : id) {
    if (c < 0x21 || c > 0x7e) return false;  // controls, spaces, DEL, non-ASCII
  }
  return true;
}

std::string NewRequestId() { return Hex(NewTraceId()); }

std::string RequestIdFor(const std::string* incoming) {
  if (incoming != nullptr && IsAcceptableRequestId(*incoming)) return *incoming;
  return NewRequestId();
}

}  // namespace kiln::telemetry
