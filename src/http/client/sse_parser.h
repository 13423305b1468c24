// Incremental Server-Sent Events parser (WHATWG "event stream interpretation"): bytes in, events
// out, whatever the chunking. Accepts LF, CRLF and CR line ends, `data:x` and `data: x`
// framings, multi-line data, comments (keep-alives) and a leading BOM.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>

namespace kiln::http {

struct SseEvent {
  std::string event;  // "event:" field; empty = "message"
  std::string data;   // "data:" lines joined with '\n'
  std::string id;     // last "id:" field seen
};

class SseParser {
 public:
  using Handler = std::function<void(const SseEvent&)>;

  // A line longer than this throws kiln::Error: a misbehaving server cannot make the client
  // buffer without bound.
  explicit SseParser(size_t max_line_bytes = size_t{16} << 20) : max_line_(max_line_bytes) {}

  // Parses `bytes` and calls `on_event` for every event completed by them.
  void Feed(std::string_view bytes, const Handler& on_event);
  // End of stream: a last event not followed by a blank line is delivered anyway (servers that
  // end with "data: [DONE]\n" exist; the spec would drop it).
  void Finish(const Handler& on_event);

  size_t comment_count() const { return comments_; }

 private:
  void ProcessLine(std::string_view line, const Handler& on_event);
  void Dispatch(const Handler& on_event);

  size_t max_line_;
  std::string line_;  // the current, not yet terminated line
  SseEvent pending_;
  bool has_data_ = false;
  bool after_cr_ = false;  // last byte was CR: a following LF belongs to the same line end
  bool at_start_ = true;   // for the optional BOM
  size_t comments_ = 0;
};

}  // namespace kiln::http
