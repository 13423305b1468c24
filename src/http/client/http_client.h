// Asynchronous HTTP/1.1 client for load generation: thousands of concurrent streamed responses
// on one io_context thread, keep-alive connection reuse, connect and idle timeouts, and a
// steady_clock timestamp taken as each piece of the body arrives. No TLS.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "http/client/url.h"
#include "http/http_types.h"

namespace boost::asio {
class io_context;
}

namespace kiln::http {

using Clock = std::chrono::steady_clock;

struct ClientOptions {
  std::chrono::milliseconds connect_timeout{10'000};
  // No byte received (or sent) for this long ends the request with an error.
  std::chrono::milliseconds idle_timeout{300'000};
  // Body bytes handed to on_body at most this many at a time.
  size_t read_buffer_bytes = 8192;
  // Sent unless the request has a User-Agent of its own.
  std::string user_agent = "kiln-bench";
};

struct ClientRequest {
  std::string method = "POST";
  std::string target = "/";  // origin-form: path and query
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;  // Host etc. are added
};

enum class StreamEnd {
  kComplete,   // the whole response was read
  kCancelled,  // Cancel()/CancelAll() before the response ended
  kError,      // connect, write, read, parse or timeout failure
};

struct StreamOutcome {
  StreamEnd end = StreamEnd::kError;
  int status = 0;     // HTTP status; 0 when no response head arrived
  std::string error;  // what went wrong, for kError
  Clock::time_point end_time;
  bool reused_connection = false;
};

// The status line and fields of a response, for clients that pass them on (a proxy).
struct ReceivedHead {
  int status = 0;
  Headers headers;          // names lower-cased, as sent otherwise
  bool has_length = false;  // Content-Length was sent (else chunked or until close)
};

// All callbacks run on the io_context thread. They may call Start/Cancel re-entrantly.
struct StreamCallbacks {
  std::function<void(int status, Clock::time_point)> on_headers;
  std::function<void(std::string_view bytes, Clock::time_point)> on_body;
  std::function<void(const StreamOutcome&)> on_end;  // exactly once per Start
  // With the fields, for a proxy; before on_headers.
  std::function<void(const ReceivedHead& head, Clock::time_point)> on_head;
};

class HttpClient {
 public:
  // Resolves `base.host` now (throws kiln::Error when it cannot), so a bad target fails before
  // any load is generated.
  HttpClient(boost::asio::io_context& io, const Url& base, ClientOptions options = {});
  ~HttpClient();
  HttpClient(const HttpClient&) = delete;
  HttpClient& operator=(const HttpClient&) = delete;

  // Sends `request` on an idle keep-alive connection, or on a new one. Returns an id for Cancel.
  uint64_t Start(ClientRequest request, StreamCallbacks callbacks);
  // Ends the request now: on_end(kCancelled) runs before Cancel returns and the connection is
  // closed. Unknown or finished ids are ignored.
  void Cancel(uint64_t id);
  void CancelAll();

  size_t active() const;
  size_t idle_connections() const;
  uint64_t connections_opened() const;

  class Impl;

 private:
  std::shared_ptr<Impl> impl_;
};

// Raises this process's open-file soft limit to the hard limit (one socket per concurrent
// stream) and returns the new soft limit.
uint64_t RaiseOpenFileLimit();

}  // namespace kiln::http
