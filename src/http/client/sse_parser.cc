#include "http/client/sse_parser.h"

#include "util/error.h"

namespace kiln::http {

void SseParser::Feed(std::string_view bytes, const Handler& on_event) {
  size_t start = 0;
  for (size_t i = 0; i < bytes.size(); ++i) {
    const char c = bytes[i];
    if (c != '\n' && c != '\r') continue;
    if (c == '\n' && after_cr_ && i == start && line_.empty()) {  // the LF of a CRLF
      after_cr_ = false;
      start = i + 1;
      continue;
    }
    line_.append(bytes.substr(start, i - start));
    ProcessLine(line_, on_event);
    line_.clear();
    after_cr_ = c == '\r';
    start = i + 1;
  }
  if (start < bytes.size()) {
    after_cr_ = false;
    line_.append(bytes.substr(start));
    KILN_CHECK(line_.size() <= max_line_, "SSE line longer than ", max_line_, " bytes");
  }
}

void SseParser::Finish(const Handler& on_event) {
  if (!line_.empty()) ProcessLine(line_, on_event);
  line_.clear();
  Dispatch(on_event);
}

void SseParser::ProcessLine(std::string_view line, const Handler& on_event) {
  if (at_start_) {
    at_start_ = false;
    if (line.substr(0, 3) == "\xEF\xBB\xBF") line.remove_prefix(3);
  }
  if (line.empty()) {
    Dispatch(on_event);
    return;
  }
  if (line.front() == ':') {
    ++comments_;
    return;
  }
  const size_t colon = line.find(':');
  std::string_view field = line.substr(0, colon);
  std::string_view value = colon == std::string_view::npos ? "" : line.substr(colon + 1);
  if (!value.empty() && value.front() == ' ') value.remove_prefix(1);
  if (field == "data") {
    if (has_data_) pending_.data += '\n';
    pending_.data.append(value);
    has_data_ = true;
  } else if (field == "event") {
    pending_.event.assign(value);
  } else if (field == "id") {
    pending_.id.assign(value);
  }  // "retry" and unknown fields are ignored, as the spec says
}

void SseParser::Dispatch(const Handler& on_event) {
  if (has_data_) on_event(pending_);
  has_data_ = false;
  pending_.data.clear();
  pending_.event.clear();  // id persists across events (last event id)
}

}  // namespace kiln::http
