// Request ids: a client's `x-request-id` is kept when it is safe to echo into headers and logs
// (1 to 128 printable ASCII characters, no spaces); anything else is replaced by a new id.
#pragma once

#include <string>
#include <string_view>

namespace kiln::telemetry {

constexpr size_t kMaxRequestIdLength = 128;

// True when `id` may be kept as sent.
bool IsAcceptableRequestId(std::string_view id);
// A new id: 32 lower-case hex characters (128 random bits).
std::string NewRequestId();
// `incoming` when acceptable (null: none sent), else a new id.
std::string RequestIdFor(const std::string* incoming);

}  // namespace kiln::telemetry
