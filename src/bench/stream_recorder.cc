#include "bench/stream_recorder.h"

#include "bench/openai_protocol.h"
#include "util/error.h"

namespace kiln::bench {
namespace {

constexpr size_t kErrorBodyBytes = 1024;

}  // namespace

void StreamRecorder::OnBody(std::string_view bytes, double t) {
  if (record_.http_status != 200) {
    const size_t room = kErrorBodyBytes - std::min(kErrorBodyBytes, error_body_.size());
    error_body_.append(bytes.substr(0, room));
    return;
  }
  try {
    sse_.Feed(bytes, [&](const http::SseEvent& e) { OnEvent(e, t); });
  } catch (const Error& e) {
    if (stream_error_.empty()) stream_error_ = e.what();
  }
}

void StreamRecorder::OnEvent(const http::SseEvent& event, double t) {
  ++events_;
  if (saw_done_) return;
  StreamEventInfo info = ParseStreamEvent(event.data);
  if (info.error && stream_error_.empty()) stream_error_ = *info.error;
  if (info.done) saw_done_ = true;
  if (info.has_content) {
    ++record_.content_events;
    if (!record_.first_token_time) record_.first_token_time = t;
    record_.last_token_time = t;
  }
  if (info.prompt_tokens) usage_prompt_ = info.prompt_tokens;
  if (info.completion_tokens) usage_completion_ = info.completion_tokens;
}

void StreamRecorder::FinishSse(double t) {
  try {
    sse_.Finish([&](const http::SseEvent& e) { OnEvent(e, t); });
  } catch (const Error& e) {
    if (stream_error_.empty()) stream_error_ = e.what();
  }
}

void StreamRecorder::OnEnd(http::StreamEnd end, const std::string& transport_error, double t) {
  record_.request_end = t;
  if (end == http::StreamEnd::kComplete && record_.http_status == 200) FinishSse(t);

  record_.usage_reported = usage_completion_.has_value();
  record_.output_tokens = usage_completion_.value_or(record_.content_events);
  record_.prompt_tokens =
      usage_prompt_.value_or(std::max<int64_t>(record_.expected_prompt_tokens, 0));

  if (!stream_error_.empty()) {
    record_.status = RequestStatus::kErrored;
    record_.error = stream_error_;
  } else if (end == http::StreamEnd::kCancelled) {
    record_.status = RequestStatus::kIncomplete;
    record_.error = "cut off by the end of the benchmark";
  } else if (end == http::StreamEnd::kError) {
    record_.status = RequestStatus::kErrored;
    record_.error = transport_error;
  } else if (record_.http_status != 200) {
    record_.status = RequestStatus::kErrored;
    record_.error = StrCat("HTTP ", record_.http_status, ": ", error_body_);
  } else if (events_ == 0) {
    record_.status = RequestStatus::kErrored;
    record_.error = "the response had no SSE events (does the server support stream=true?)";
  } else {
    record_.status = RequestStatus::kSuccessful;
  }
}

}  // namespace kiln::bench
