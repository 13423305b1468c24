// What one benchmark request did, measured on the client: the raw material of every metric.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace kiln::bench {

enum class RequestStatus {
  kSuccessful,
  kIncomplete,  // still running when the benchmark ended (cut off by --max-seconds)
  kErrored,
};

const char* StatusName(RequestStatus status);  // "successful", "incomplete", "errored"

// Times are seconds on the run's steady clock (0 = when `kiln bench` started measuring);
// reports convert them to Unix time.
struct RequestRecord {
  int64_t index = 0;                       // position in the data stream
  double scheduled_time = 0;               // when the load pattern wanted it sent
  double request_start = 0;                // just before the connection was taken or opened
  std::optional<double> first_token_time;  // first SSE event that carried content
  std::optional<double> last_token_time;   // last such event
  double request_end = 0;                  // response finished, failed or was cut off

  int64_t expected_prompt_tokens = -1;   // what the data generator aimed for (-1: unknown)
  int64_t requested_output_tokens = -1;  // max_tokens sent (-1: none)
  int64_t prompt_tokens = 0;             // server usage, else expected_prompt_tokens (or 0)
  int64_t output_tokens = 0;             // server usage, else content events
  int64_t content_events = 0;            // SSE events that carried content
  bool usage_reported = false;           // token counts came from a `usage` object

  int http_status = 0;
  RequestStatus status = RequestStatus::kErrored;
  std::string error;

  double LatencySeconds() const { return request_end - request_start; }
  // Milliseconds; nullopt when undefined (no content, or a single output token for ITL).
  std::optional<double> TtftMs() const;
  std::optional<double> ItlMs() const;
  std::optional<double> TpotMs() const;
};

}  // namespace kiln::bench
