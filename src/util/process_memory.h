// This process's resident memory, from /proc/self/statm (one small read, no parsing of
// /proc/self/status): /v1/status reports it on every poll.
#pragma once

#include <cstdint>

namespace kiln {

// Resident set size in bytes; 0 when /proc is not readable.
int64_t ResidentBytes();

}  // namespace kiln
