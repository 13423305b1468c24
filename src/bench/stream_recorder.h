// Turns one streamed OpenAI response (status, body bytes with arrival times, how it ended) into
// a RequestRecord. Independent of the network, so tests can feed it bytes directly.
#pragma once

#include <string>
#include <string_view>

#include "bench/request_record.h"
#include "http/client/http_client.h"
#include "http/client/sse_parser.h"

namespace kiln::bench {

class StreamRecorder {
 public:
  // `record` carries the index, scheduled/start times and the expected token counts.
  explicit StreamRecorder(RequestRecord record) : record_(std::move(record)) {}

  void OnHeaders(int status) { record_.http_status = status; }
  // `t`: arrival time of these bytes on the record's clock.
  void OnBody(std::string_view bytes, double t);
  // Sets the status, end time and token counts. kCancelled means cut off by the benchmark end.
  void OnEnd(http::StreamEnd end, const std::string& transport_error, double t);

  const RequestRecord& record() const { return record_; }
  RequestRecord TakeRecord() { return std::move(record_); }

 private:
  void OnEvent(const http::SseEvent& event, double t);
  void FinishSse(double t);

  RequestRecord record_;
  http::SseParser sse_;
  std::string stream_error_;  // first in-stream error or undecodable event
  std::string error_body_;    // start of a non-200 response body
  int64_t events_ = 0;
  bool saw_done_ = false;
  std::optional<int64_t> usage_prompt_, usage_completion_;
};

}  // namespace kiln::bench
