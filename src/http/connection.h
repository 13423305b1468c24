// One client connection (internal to http/): reads requests with Beast's parser under header,
// body and time limits, hands each to the handler, writes responses from a mutex-guarded output
// buffer that any thread may append to, and keeps a read pending while a request is handled so
// that a client that disconnects is noticed at once (and its request cancelled).
#pragma once

#include <atomic>
// GCC 12 reports -Wmaybe-uninitialized inside Beast's parser (a boost::optional it reads only
// once set) when optimizing with sanitizers; the warning is about Boost's code, not ours.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>
#pragma GCC diagnostic pop
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "http/exchange.h"
#include "http/server_options.h"

namespace kiln::http {

// State every connection of one server shares: options, handler, the set of live connections.
struct ServerShared;

class Connection : public std::enable_shared_from_this<Connection> {
 public:
  // `socket` must have been accepted onto a strand (its executor serializes this connection).
  Connection(boost::asio::ip::tcp::socket socket, std::shared_ptr<ServerShared> shared);
  void Start();
  void Close();  // thread-safe

  // The Exchange API, for the request numbered `serial` (thread-safe).
  void Respond(uint64_t serial, Response response);
  void StartStream(uint64_t serial, int status, std::string content_type, Headers headers);
  bool Write(uint64_t serial, std::string_view data);
  void End(uint64_t serial);
  bool IsClosed(uint64_t serial) const;
  void OnClose(uint64_t serial, std::function<void()> callback);
  void Post(std::function<void()> task);
  void Abandon(uint64_t serial);

 private:
  enum class Phase { kReading, kHandling, kStreaming, kDone };

  // Strand only.
  void ReadRequest();
  void OnHeader(boost::beast::error_code ec);
  void ReadBody();
  void OnBody(boost::beast::error_code ec);
  void OnReadError(boost::beast::error_code ec);
  void Dispatch();
  void Watch();
  void OnWatch(boost::beast::error_code ec, size_t bytes);
  void Flush();
  void OnWrite(boost::beast::error_code ec);
  void AfterResponse();
  void FailRequest(int status, const std::string& message);
  void Linger();
  void DoClose();
  void ArmDeadline(std::chrono::milliseconds after);
  void DisarmDeadline();
  void ArmKeepAlive(std::chrono::steady_clock::time_point at);
  void OnKeepAlive(uint64_t serial);

  // mu_ held.
  void ScheduleFlushLocked();
  bool AcceptsLocked(uint64_t serial, Phase phase) const;

  std::shared_ptr<ServerShared> shared_;
  std::string peer_;  // "address:port", read once at accept
  const ServerOptions& options_;
  boost::asio::ip::tcp::socket socket_;
  boost::asio::any_io_executor strand_;
  boost::asio::steady_timer deadline_;
  boost::asio::steady_timer keep_alive_timer_;
  boost::beast::flat_buffer buffer_;
  std::optional<boost::beast::http::request_parser<boost::beast::http::string_body>> parser_;

  // Strand only.
  uint64_t deadline_generation_ = 0;
  bool watching_ = false;       // a read is pending outside request parsing
  bool awaiting_next_ = false;  // response done; that read starts the next request
  bool writing_ = false;
  bool finish_after_write_ = false;
  bool lingering_ = false;
  std::string out_;  // bytes being written

  // Shared with other threads.
  mutable std::mutex mu_;
  std::atomic<uint64_t> serial_{0};
  std::atomic<bool> closed_{false};
  std::atomic<bool> cut_off_{false};  // too slow a reader: closing, writes refused
  Phase phase_ = Phase::kReading;
  bool keep_alive_ = true;
  bool head_ = false;
  bool http10_ = false;
  bool chunked_ = true;
  bool flush_posted_ = false;
  bool response_finished_ = false;  // the whole response is in pending_
  std::string pending_;             // bytes waiting for the socket
  std::function<void()> on_close_;
  std::chrono::steady_clock::time_point last_write_;
};

}  // namespace kiln::http
