// The front of `kiln launch`: one HTTP endpoint with the API of `kiln serve`, in front of N
// supervised replicas. It answers /health (ready while any replica is in rotation), /info
// (a replica's, plus the replica count and core sets) and /metrics (its own kiln_router_*
// counters and every replica's metrics with a `replica` label) and /v1/status (every
// replica's, for kiln top) itself, and proxies every other route. All routing state lives on one
// loop thread; the HTTP server's I/O threads only post to it.
#pragma once

#include <atomic>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <thread>

#include "http/http_server.h"
#include "router/dispatcher.h"
#include "router/launch_config.h"
#include "router/router_metrics.h"
#include "router/supervisor.h"
#include "telemetry/span_exporter.h"

namespace kiln {

class ReplicaRouter {
 public:
  explicit ReplicaRouter(LaunchConfig config);
  ~ReplicaRouter();  // Stop()
  ReplicaRouter(const ReplicaRouter&) = delete;
  ReplicaRouter& operator=(const ReplicaRouter&) = delete;

  // Binds the front endpoint (throws kiln::Error when the address is taken: before any
  // replica starts), starts the replicas and waits until every one is ready. Throws
  // kiln::Error naming the cause when one exits before that or `startup_timeout` passes;
  // false (everything stopped) when `interrupted()` says so first.
  bool Start(const std::function<bool()>& interrupted);
  uint16_t port() const;
  // The front stops taking requests (/health 503, new requests 503); requests in flight and
  // queued finish, for up to `drain_timeout`; then every replica is sent SIGTERM and waited
  // for. Blocks.
  void Drain(const std::function<bool()>& cut_short);
  void Stop();

 private:
  using Clock = std::chrono::steady_clock;

  void Handle(http::Request request, std::shared_ptr<http::Exchange> exchange);  // I/O thread
  void Route(http::Request request, std::shared_ptr<http::Exchange> exchange,
             Clock::time_point arrival);  // loop thread
  void ServeHealth(const std::shared_ptr<http::Exchange>& exchange) const;
  void ServeInfo(const std::shared_ptr<http::Exchange>& exchange) const;
  void ServeMetrics(const std::shared_ptr<http::Exchange>& exchange);
  void ServeStatus(const std::shared_ptr<http::Exchange>& exchange);  // router_status.cc
  bool Authorized(const http::Request& request) const;
  bool AnyAvailable() const;
  void ArmTick();
  // Runs fn on the loop thread and waits for it.
  template <typename F>
  auto OnLoop(F fn);

  LaunchConfig config_;
  boost::asio::io_context loop_;
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work_;
  boost::asio::steady_timer tick_;
  std::thread loop_thread_;
  RouterMetrics metrics_;
  std::unique_ptr<telemetry::SpanExporter> spans_;  // with --otlp-endpoint
  std::unique_ptr<Supervisor> supervisor_;
  std::unique_ptr<Dispatcher> dispatcher_;
  std::unique_ptr<http::HttpServer> http_;
  std::atomic<bool> draining_{false};
  bool stopped_ = false;
};

}  // namespace kiln
