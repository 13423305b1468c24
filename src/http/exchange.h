// One request's response channel, handed to the handler. Thread-safe: the engine thread may
// call Write while the I/O thread reads the socket; every call is marshalled onto the
// connection's strand. Calls after the response ended, or after the client left, are ignored.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "http/http_types.h"

namespace kiln::http {

class Connection;
class ExchangeGate;

class Exchange {
 public:
  // `gate`: the server's (exchange_gate.h); every call goes through it.
  Exchange(std::weak_ptr<Connection> connection, uint64_t serial,
           std::shared_ptr<ExchangeGate> gate);
  // A handler that drops its Exchange without answering gets a 500 sent for it, so a bug can
  // never leave a client waiting forever.
  ~Exchange();
  Exchange(const Exchange&) = delete;
  Exchange& operator=(const Exchange&) = delete;

  // A complete response. Only the first Respond or StartStream counts.
  void Respond(Response response);
  // Starts a streamed response (chunked). A text/event-stream gets ":\n\n" keep-alive comments
  // while idle (ServerOptions::sse_keep_alive).
  void StartStream(int status, std::string content_type, Headers headers);
  // Appends to the stream. False when the client is gone, or was too slow and has been cut off
  // (ServerOptions::max_pending_write_bytes): stop producing for it.
  bool Write(std::string_view data);
  // Ends the stream.
  void End();

  // True once the client disconnected (or the request is over).
  bool closed() const;
  // `callback` runs once, on the connection's strand, if the client disconnects before the
  // response ended; at once (posted) if it already has.
  void OnClose(std::function<void()> callback);
  // Runs `task` on the connection's strand (dropped if the connection is gone).
  void Post(std::function<void()> task);

 private:
  // fn(connection) through the gate, if the connection is still there; false if it is not.
  template <class F>
  bool WithConnection(const F& fn) const;

  std::weak_ptr<Connection> connection_;
  uint64_t serial_;
  std::shared_ptr<ExchangeGate> gate_;
};

// Called on an I/O thread for each complete request; must not block. It answers through the
// Exchange, now or later, from any thread.
using Handler = std::function<void(Request request, std::shared_ptr<Exchange> exchange)>;

}  // namespace kiln::http
