// The one way an Exchange reaches its connection (internal to http/).
//
// Why: an Exchange call from an engine thread holds a strong reference to its Connection for
// the length of the call. Were that the last reference while the server is being destroyed,
// the Connection (its socket, strand and timers) would be destroyed after the io_context whose
// services those objects need: a use after free. The server closes the gate, waiting for calls
// in progress, before its io_context goes; later calls do nothing.
#pragma once

#include <mutex>
#include <shared_mutex>

namespace kiln::http {

class ExchangeGate {
 public:
  // Runs fn() unless the gate is closed.
  template <class F>
  void Run(const F& fn) {
    std::shared_lock<std::shared_mutex> lock(mu_);
    if (!closed_) fn();
  }
  // Waits for the calls in progress, then turns every later Run into a no-op.
  void Close() {
    std::unique_lock<std::shared_mutex> lock(mu_);
    closed_ = true;
  }

 private:
  std::shared_mutex mu_;
  bool closed_ = false;
};

}  // namespace kiln::http
