// Limits and timeouts of the HTTP server. Defaults suit a model server: TGI's 2 MB payload
// limit, SSE keep-alive comments every 15 s as axum sends them.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

#include "http/http_types.h"

namespace kiln::http {

struct ServerOptions {
  std::string host = "127.0.0.1";
  uint16_t port = 3000;  // 0: any free port (see HttpServer::port())
  int io_threads = 2;
  size_t max_body_bytes = 2'000'000;                // larger bodies get 413
  size_t max_header_bytes = 16 * 1024;              // request line + fields; larger get 431
  size_t max_header_count = 100;                    // more fields get 431
  std::chrono::milliseconds read_timeout{60'000};   // to receive one whole request
  std::chrono::milliseconds idle_timeout{75'000};   // keep-alive wait for the next request
  std::chrono::milliseconds write_timeout{60'000};  // a write that makes no progress
  // Idle text/event-stream responses get a ":\n\n" comment this often (0: never), so proxies
  // and clients do not time out while a long prompt is prefilled or a queue drains.
  std::chrono::milliseconds sse_keep_alive{15'000};
  // Bytes a streamed response may have waiting for a slow client before it is cut off: the
  // engine never waits on a socket.
  size_t max_pending_write_bytes = 4u << 20;
  // Builds the body of the errors the server answers by itself (400, 408, 413, 431, 500);
  // default: plain text.
  std::function<Response(int status, const std::string& message)> error_response;
};

}  // namespace kiln::http
