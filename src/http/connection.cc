#include "http/connection.h"

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"  // in Beast's parser; see connection.h
#include <boost/asio/post.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/string.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/read.hpp>
#pragma GCC diagnostic pop
#include <cctype>

#include "http/server_shared.h"
#include "http/wire_format.h"
#include "util/log.h"

namespace kiln::http {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
using Clock = std::chrono::steady_clock;

// Bytes of pipelined requests kept while a response is pending; past this, reading pauses.
constexpr size_t kMaxBufferedAhead = 64 * 1024;
constexpr size_t kReadChunk = 4096;
constexpr std::chrono::milliseconds kLingerTime{2000};
constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";

std::string Lower(boost::beast::string_view s) {
  std::string out(s.data(), s.size());
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

Request ToRequest(bhttp::request<bhttp::string_body>&& msg) {
  Request r;
  r.method = std::string(msg.method_string().data(), msg.method_string().size());
  r.target = std::string(msg.target().data(), msg.target().size());
  size_t q = r.target.find('?');
  r.path = r.target.substr(0, q);
  if (q != std::string::npos) r.query = r.target.substr(q + 1);
  r.headers.reserve(8);
  for (const auto& field : msg) {
    r.headers.emplace_back(Lower(field.name_string()),
                           std::string(field.value().data(), field.value().size()));
  }
  r.version = static_cast<int>(msg.version());
  r.body = std::move(msg.body());
  return r;
}

Response DefaultError(int status, const std::string& message) {
  Response r;
  r.status = status;
  r.content_type = "text/plain; charset=utf-8";
  r.body = message;
  return r;
}

}  // namespace

Connection::Connection(asio::ip::tcp::socket socket, std::shared_ptr<ServerShared> shared)
    : shared_(std::move(shared)),
      options_(shared_->options),
      socket_(std::move(socket)),
      strand_(socket_.get_executor()),
      deadline_(strand_),
      keep_alive_timer_(strand_) {
  beast::error_code ignored;
  socket_.set_option(asio::ip::tcp::no_delay(true), ignored);  // SSE frames are small
  const asio::ip::tcp::endpoint peer = socket_.remote_endpoint(ignored);
  if (!ignored) {
    const asio::ip::address a = peer.address();
    peer_ = (a.is_v6() ? "[" + a.to_string() + "]" : a.to_string()) + ":" +
            std::to_string(peer.port());
  }
}

void Connection::Start() {
  asio::post(strand_, [self = shared_from_this()] { self->ReadRequest(); });
}

void Connection::Close() {
  asio::post(strand_, [self = shared_from_this()] { self->DoClose(); });
}

// ---- Reading requests (strand) ----

void Connection::ReadRequest() {
  if (closed_) return;
  parser_.emplace();
  parser_->header_limit(static_cast<uint32_t>(options_.max_header_bytes));
  parser_->body_limit(options_.max_body_bytes);
  ArmDeadline(serial_ == 0 ? options_.read_timeout : options_.idle_timeout);
  bhttp::async_read_header(
      socket_, buffer_, *parser_,
      [self = shared_from_this()](beast::error_code ec, size_t) { self->OnHeader(ec); });
}

void Connection::OnHeader(beast::error_code ec) {
  if (ec) return OnReadError(ec);
  const auto& header = parser_->get();
  if (static_cast<size_t>(std::distance(header.begin(), header.end())) >
      options_.max_header_count) {
    return FailRequest(
        431, "Too many header fields (limit " + std::to_string(options_.max_header_count) + ")");
  }
  auto expect = header.find(bhttp::field::expect);
  if (expect != header.end() && beast::iequals(expect->value(), "100-continue")) {
    asio::async_write(socket_, asio::buffer(kContinue.data(), kContinue.size()),
                      [self = shared_from_this()](beast::error_code wec, size_t) {
                        if (wec) return self->DoClose();
                        self->ReadBody();
                      });
    return;
  }
  ReadBody();
}

void Connection::ReadBody() {
  if (parser_->is_done()) return OnBody({});
  ArmDeadline(options_.read_timeout);
  bhttp::async_read(
      socket_, buffer_, *parser_,
      [self = shared_from_this()](beast::error_code ec, size_t) { self->OnBody(ec); });
}

void Connection::OnBody(beast::error_code ec) {
  if (ec) return OnReadError(ec);
  Dispatch();
}

void Connection::OnReadError(beast::error_code ec) {
  if (closed_) return;
  if (ec == bhttp::error::header_limit) {
    return FailRequest(431, "Request header fields too large (limit " +
                                std::to_string(options_.max_header_bytes) + " bytes)");
  }
  if (ec == bhttp::error::body_limit) {
    return FailRequest(413, "Payload too large: the body exceeds the limit of " +
                                std::to_string(options_.max_body_bytes) + " bytes");
  }
  if (ec == bhttp::error::end_of_stream || ec == bhttp::error::partial_message ||
      ec == asio::error::eof || ec == asio::error::operation_aborted ||
      ec == asio::error::connection_reset || ec == asio::error::bad_descriptor) {
    return DoClose();  // the client left, or the deadline closed the socket
  }
  FailRequest(400, "Bad request: " + ec.message());
}

void Connection::Dispatch() {
  DisarmDeadline();
  const bool keep_alive = parser_->get().keep_alive();  // HTTP/1.0 and 1.1 rules
  Request request = ToRequest(parser_->release());
  request.client = peer_;
  parser_.reset();
  if (buffer_.size() == 0 && buffer_.capacity() > kMaxBufferedAhead) buffer_.shrink_to_fit();
  uint64_t serial;
  {
    std::lock_guard<std::mutex> lock(mu_);
    serial = serial_.load() + 1;
    serial_.store(serial);
    phase_ = Phase::kHandling;
    keep_alive_ = keep_alive && !shared_->stopping;
    head_ = request.method == "HEAD";
    http10_ = request.version == 10;
    on_close_ = nullptr;
  }
  Watch();
  auto exchange = std::make_shared<Exchange>(weak_from_this(), serial, shared_->gate);
  try {
    shared_->handler(std::move(request), exchange);
  } catch (const std::exception& e) {
    log::Error(std::string("http handler failed: ") + e.what());
    Respond(serial, options_.error_response ? options_.error_response(500, "Internal server error")
                                            : DefaultError(500, "Internal server error"));
  }
}

// A read kept pending while a request is handled: it notices a client that leaves (EOF or
// reset) at once, and holds the first bytes of a pipelined next request.
void Connection::Watch() {
  if (watching_ || closed_) return;
  if (lingering_) buffer_.consume(buffer_.size());
  if (buffer_.size() >= kMaxBufferedAhead) return;
  watching_ = true;
  socket_.async_read_some(
      buffer_.prepare(kReadChunk),
      [self = shared_from_this()](beast::error_code ec, size_t n) { self->OnWatch(ec, n); });
}

void Connection::OnWatch(beast::error_code ec, size_t bytes) {
  watching_ = false;
  if (ec == asio::error::operation_aborted && awaiting_next_ && !closed_) {
    awaiting_next_ = false;  // cancelled to parse requests already buffered
    return ReadRequest();
  }
  if (ec) return DoClose();
  buffer_.commit(bytes);
  if (awaiting_next_) {
    awaiting_next_ = false;
    return ReadRequest();
  }
  Watch();
}

// ---- Writing responses ----

bool Connection::AcceptsLocked(uint64_t serial, Phase phase) const {
  return serial == serial_.load() && phase_ == phase && !closed_ && !cut_off_;
}

void Connection::ScheduleFlushLocked() {
  if (flush_posted_) return;
  flush_posted_ = true;
  asio::post(strand_, [self = shared_from_this()] { self->Flush(); });
}

void Connection::Respond(uint64_t serial, Response response) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!AcceptsLocked(serial, Phase::kHandling)) return;
  pending_ += ResponseHead(response.status, response.content_type, response.headers,
                           static_cast<long long>(response.body.size()), false, keep_alive_);
  if (!head_) pending_ += response.body;
  phase_ = Phase::kDone;
  response_finished_ = true;
  ScheduleFlushLocked();
}

void Connection::StartStream(uint64_t serial, int status, std::string content_type,
                             Headers headers) {
  bool sse;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!AcceptsLocked(serial, Phase::kHandling)) return;
    chunked_ = !http10_;  // HTTP/1.0: raw body, ended by closing the connection
    if (http10_) keep_alive_ = false;
    pending_ += ResponseHead(status, content_type, headers, -1, chunked_, keep_alive_);
    phase_ = Phase::kStreaming;
    last_write_ = Clock::now();
    sse = content_type.rfind("text/event-stream", 0) == 0;
    ScheduleFlushLocked();
  }
  if (sse && options_.sse_keep_alive.count() > 0) {
    asio::post(strand_, [self = shared_from_this()] {
      self->ArmKeepAlive(Clock::now() + self->options_.sse_keep_alive);
    });
  }
}

bool Connection::Write(uint64_t serial, std::string_view data) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!AcceptsLocked(serial, Phase::kStreaming)) return false;
  if (pending_.size() + data.size() > options_.max_pending_write_bytes) {
    log::Warn("http: a streaming client is not reading; closing its connection");
    cut_off_ = true;
    asio::post(strand_, [self = shared_from_this()] { self->DoClose(); });
    return false;
  }
  if (chunked_) {
    AppendChunk(pending_, data);
  } else {
    pending_.append(data);
  }
  last_write_ = Clock::now();
  ScheduleFlushLocked();
  return true;
}

void Connection::End(uint64_t serial) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!AcceptsLocked(serial, Phase::kStreaming)) return;
  if (chunked_) pending_ += kLastChunk;
  phase_ = Phase::kDone;
  response_finished_ = true;
  ScheduleFlushLocked();
}

bool Connection::IsClosed(uint64_t serial) const {
  return closed_ || cut_off_ || serial != serial_.load();
}

void Connection::OnClose(uint64_t serial, std::function<void()> callback) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!closed_ && serial == serial_.load()) {
      if (phase_ == Phase::kHandling || phase_ == Phase::kStreaming) {
        on_close_ = std::move(callback);
      }
      return;  // a finished request has nothing left to cancel
    }
  }
  asio::post(strand_, std::move(callback));
}

void Connection::Post(std::function<void()> task) { asio::post(strand_, std::move(task)); }

void Connection::Abandon(uint64_t serial) {
  Response r = options_.error_response
                   ? options_.error_response(500, "The request was dropped without a response")
                   : DefaultError(500, "The request was dropped without a response");
  Respond(serial, std::move(r));
  End(serial);
}

void Connection::Flush() {
  if (closed_) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    flush_posted_ = false;
    if (writing_) return;  // OnWrite flushes again
    out_.clear();
    out_.swap(pending_);
    if (response_finished_) finish_after_write_ = true;
    response_finished_ = false;
  }
  if (out_.empty()) {
    if (finish_after_write_) {
      finish_after_write_ = false;
      AfterResponse();
    }
    return;
  }
  writing_ = true;
  ArmDeadline(options_.write_timeout);
  asio::async_write(
      socket_, asio::buffer(out_),
      [self = shared_from_this()](beast::error_code ec, size_t) { self->OnWrite(ec); });
}

void Connection::OnWrite(beast::error_code ec) {
  writing_ = false;
  if (ec) return DoClose();
  DisarmDeadline();
  Flush();
}

void Connection::AfterResponse() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    on_close_ = nullptr;
    phase_ = Phase::kReading;
  }
  keep_alive_timer_.cancel();
  if (!keep_alive_ || shared_->stopping) return Linger();
  if (!watching_) return ReadRequest();
  awaiting_next_ = true;
  if (buffer_.size() > 0) {
    beast::error_code ignored;
    socket_.cancel(ignored);  // the next request is already buffered: parse it now
  } else {
    ArmDeadline(options_.idle_timeout);
  }
}

// An error answered before the request was handled; the connection closes after it.
void Connection::FailRequest(int status, const std::string& message) {
  parser_.reset();
  DisarmDeadline();
  Response r = options_.error_response ? options_.error_response(status, message)
                                       : DefaultError(status, message);
  std::lock_guard<std::mutex> lock(mu_);
  keep_alive_ = false;
  pending_ += ResponseHead(r.status, r.content_type, r.headers,
                           static_cast<long long>(r.body.size()), false, false);
  pending_ += r.body;
  phase_ = Phase::kDone;
  response_finished_ = true;
  ScheduleFlushLocked();
}

// Closes after a "Connection: close" response: half-close, then read and discard what the
// client still sends (a body we refused) until it closes, so it sees our response rather than
// a reset.
void Connection::Linger() {
  lingering_ = true;
  beast::error_code ignored;
  socket_.shutdown(asio::ip::tcp::socket::shutdown_send, ignored);
  ArmDeadline(kLingerTime);
  Watch();
}

void Connection::DoClose() {
  if (closed_.exchange(true)) return;
  std::function<void()> callback;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (phase_ == Phase::kHandling || phase_ == Phase::kStreaming) callback = std::move(on_close_);
    on_close_ = nullptr;
    pending_.clear();
  }
  DisarmDeadline();
  keep_alive_timer_.cancel();
  beast::error_code ignored;
  socket_.shutdown(asio::ip::tcp::socket::shutdown_both, ignored);
  socket_.close(ignored);
  auto self = shared_from_this();  // keeps this alive past Unregister
  shared_->Unregister(this);
  if (callback) callback();
}

// ---- Timers (strand) ----

void Connection::ArmDeadline(std::chrono::milliseconds after) {
  const uint64_t generation = ++deadline_generation_;
  deadline_.expires_after(after);
  deadline_.async_wait([self = shared_from_this(), generation](beast::error_code ec) {
    if (ec || generation != self->deadline_generation_) return;
    self->DoClose();  // too slow: the pending read or write fails and the connection ends
  });
}

void Connection::DisarmDeadline() {
  ++deadline_generation_;
  deadline_.cancel();
}

void Connection::ArmKeepAlive(Clock::time_point at) {
  keep_alive_timer_.expires_at(at);
  keep_alive_timer_.async_wait(
      [self = shared_from_this(), serial = serial_.load()](beast::error_code ec) {
        if (!ec) self->OnKeepAlive(serial);
      });
}

void Connection::OnKeepAlive(uint64_t serial) {
  Clock::time_point due;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!AcceptsLocked(serial, Phase::kStreaming)) return;
    due = last_write_ + options_.sse_keep_alive;
  }
  if (Clock::now() >= due) {
    if (!Write(serial, ":\n\n")) return;
    due = Clock::now() + options_.sse_keep_alive;
  }
  ArmKeepAlive(due);
}

}  // namespace kiln::http
