// Sends each request to a replica: the balancer's pick among the replicas in rotation that
// have room; when every one is full (or none is ready) the request waits in the router's own
// bounded queue, and past that bound it is refused with 429 "Model is overloaded". Requests
// whose replica failed before their first byte come back here to be re-dispatched, ahead of
// the queue. Loop thread only.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <unordered_map>

#include "router/balancer.h"
#include "router/launch_config.h"
#include "router/proxy_call.h"
#include "router/router_metrics.h"
#include "router/supervisor.h"

namespace kiln {

class Dispatcher : public CallHost {
 public:
  using Clock = std::chrono::steady_clock;

  Dispatcher(boost::asio::io_context& loop, const LaunchConfig& config, Supervisor& supervisor,
             RouterMetrics& metrics);

  // A new request: to a replica, into the queue, or refused.
  void Submit(std::shared_ptr<ProxyCall> call);
  // `call` failed on `r` before its first byte reached the client: try another replica, or
  // (`queue_if_busy`) wait for one at the head of the queue. False when its retries are used
  // up, or no replica has room and it may not wait: the call then answers itself.
  bool Retry(std::shared_ptr<ProxyCall> call, Replica& r, bool queue_if_busy) override;
  // `call`'s request on replica `index` (as of `generation`) ended.
  void Released(int index, uint64_t generation, bool generation_route) override;
  // A replica entered the rotation, or gained room: serve the queue.
  void Pump();
  // Expires queued calls past the queue timeout.
  void Tick(Clock::time_point now);
  // Draining: new calls are refused with 503; queued and running ones go on.
  void BeginDrain();
  // Stopping: every call still running or queued is ended now, and no more are taken.
  void Shutdown();
  // The supervisor is going away: no replica is reachable through this any more.
  void Detach() { supervisor_ = nullptr; }
  // A call answered (or its client left): it leaves the registry.
  void Finished(ProxyCall* call) override { live_.erase(call); }
  size_t active() const { return live_.size(); }

  size_t queued() const { return queue_.size(); }
  RouterCounters& counters() override { return counters_; }
  const LaunchConfig& config() const { return config_; }
  RouterMetrics& metrics() override { return metrics_; }
  boost::asio::io_context& loop() override { return loop_; }
  telemetry::SpanExporter* spans() override { return spans_; }
  void set_spans(telemetry::SpanExporter* spans) { spans_ = spans; }
  Replica* replica(int index) override;

 private:
  // Sends `call` to a replica if one has room; false if none does.
  bool TryDispatch(const std::shared_ptr<ProxyCall>& call);
  void Enqueue(std::shared_ptr<ProxyCall> call, bool front);

  boost::asio::io_context& loop_;
  const LaunchConfig& config_;
  Supervisor* supervisor_;
  RouterMetrics& metrics_;
  Balancer balancer_;
  std::deque<std::shared_ptr<ProxyCall>> queue_;
  RouterCounters counters_;
  std::unordered_map<ProxyCall*, std::weak_ptr<ProxyCall>> live_;
  bool draining_ = false;
  bool stopping_ = false;
  telemetry::SpanExporter* spans_ = nullptr;  // owned by the ReplicaRouter
};

}  // namespace kiln
