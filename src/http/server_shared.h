// State shared by an HttpServer and its connections (internal to http/).
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <unordered_map>

#include "http/exchange.h"
#include "http/exchange_gate.h"
#include "http/server_options.h"

namespace kiln::http {

class Connection;

struct ServerShared {
  ServerOptions options;
  Handler handler;
  std::atomic<bool> stopping{false};
  // Closed by the server before its io_context is destroyed (exchange_gate.h).
  std::shared_ptr<ExchangeGate> gate = std::make_shared<ExchangeGate>();

  // Live connections, owned here while open so that a connection between operations (handler
  // still computing, no I/O pending) stays alive; removed when it closes.
  void Register(const std::shared_ptr<Connection>& c) {
    std::lock_guard<std::mutex> lock(mu);
    live.emplace(c.get(), c);
  }
  void Unregister(Connection* c) {
    std::shared_ptr<Connection> keep;  // destroyed outside the lock
    std::lock_guard<std::mutex> lock(mu);
    auto it = live.find(c);
    if (it != live.end()) {
      keep = std::move(it->second);
      live.erase(it);
    }
  }
  size_t Count() {
    std::lock_guard<std::mutex> lock(mu);
    return live.size();
  }

  std::mutex mu;
  std::unordered_map<Connection*, std::shared_ptr<Connection>> live;
};

}  // namespace kiln::http
