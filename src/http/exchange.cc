#include "http/exchange.h"

#include "http/connection.h"

namespace kiln::http {

Exchange::Exchange(std::weak_ptr<Connection> connection, uint64_t serial)
    : connection_(std::move(connection)), serial_(serial) {}

Exchange::~Exchange() {
  if (auto c = connection_.lock()) c->Abandon(serial_);
}

void Exchange::Respond(Response response) {
  if (auto c = connection_.lock()) c->Respond(serial_, std::move(response));
}

void Exchange::StartStream(int status, std::string content_type, Headers headers) {
  if (auto c = connection_.lock()) {
    c->StartStream(serial_, status, std::move(content_type), std::move(headers));
  }
}

bool Exchange::Write(std::string_view data) {
  auto c = connection_.lock();
  return c && c->Write(serial_, data);
}

void Exchange::End() {
  if (auto c = connection_.lock()) c->End(serial_);
}

bool Exchange::closed() const {
  auto c = connection_.lock();
  return !c || c->IsClosed(serial_);
}

void Exchange::OnClose(std::function<void()> callback) {
  if (auto c = connection_.lock()) {
    c->OnClose(serial_, std::move(callback));
  } else if (callback) {
    callback();  // the connection is gone already
  }
}

void Exchange::Post(std::function<void()> task) {
  if (auto c = connection_.lock()) c->Post(std::move(task));
}

}  // namespace kiln::http
