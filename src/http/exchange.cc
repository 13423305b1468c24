#include "http/exchange.h"

#include "http/connection.h"
#include "http/exchange_gate.h"

namespace kiln::http {

Exchange::Exchange(std::weak_ptr<Connection> connection, uint64_t serial,
                   std::shared_ptr<ExchangeGate> gate)
    : connection_(std::move(connection)), serial_(serial), gate_(std::move(gate)) {}

template <class F>
bool Exchange::WithConnection(const F& fn) const {
  bool found = false;
  gate_->Run([&] {
    if (auto c = connection_.lock()) {
      found = true;
      fn(*c);
    }
  });
  return found;
}

Exchange::~Exchange() {
  WithConnection([&](Connection& c) { c.Abandon(serial_); });
}

void Exchange::Respond(Response response) {
  WithConnection([&](Connection& c) { c.Respond(serial_, std::move(response)); });
}

void Exchange::StartStream(int status, std::string content_type, Headers headers) {
  WithConnection([&](Connection& c) {
    c.StartStream(serial_, status, std::move(content_type), std::move(headers));
  });
}

bool Exchange::Write(std::string_view data) {
  bool written = false;
  WithConnection([&](Connection& c) { written = c.Write(serial_, data); });
  return written;
}

void Exchange::End() {
  WithConnection([&](Connection& c) { c.End(serial_); });
}

bool Exchange::closed() const {
  bool closed = true;
  WithConnection([&](Connection& c) { closed = c.IsClosed(serial_); });
  return closed;
}

void Exchange::OnClose(std::function<void()> callback) {
  const bool registered =
      WithConnection([&](Connection& c) { c.OnClose(serial_, std::move(callback)); });
  if (!registered && callback) callback();  // the connection (or the server) is gone already
}

void Exchange::Post(std::function<void()> task) {
  WithConnection([&](Connection& c) { c.Post(std::move(task)); });
}

}  // namespace kiln::http
