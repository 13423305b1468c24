// Asynchronous HTTP/1.1 server on Boost.Beast/Asio: a few I/O threads serve every connection
// (never a thread per connection), with keep-alive, limits on headers and bodies, timeouts,
// streamed (chunked / SSE) responses and prompt detection of clients that disconnect.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "http/exchange.h"
#include "http/http_types.h"
#include "http/server_options.h"

namespace kiln::http {

class HttpServer {
 public:
  HttpServer(ServerOptions options, Handler handler);
  ~HttpServer();  // Stop()
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Binds and listens, then starts the I/O threads. Throws kiln::Error when the address
  // cannot be bound.
  void Start();
  // The bound port (the chosen one when options.port was 0).
  uint16_t port() const;
  // Stops accepting, closes every connection (clients mid-request see the connection close)
  // and joins the I/O threads. Idempotent.
  void Stop();
  // Open connections, for tests and metrics.
  size_t connection_count() const;

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace kiln::http
