// The router's own Prometheus metrics (kiln_router_*): per-replica requests, failures,
// restarts, state and outstanding requests; retries, refusals, queue; the router's added
// latency (arrival -> sent to a replica; a replica's chunk -> handed to the client).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "util/histogram.h"

namespace kiln {

struct Replica;

struct RouterCounters {
  uint64_t retries = 0;         // re-dispatches after a replica failed a request
  uint64_t rejected = 0;        // 429: every replica and the queue full
  uint64_t unavailable = 0;     // 503: no replica within the queue timeout, or draining
  uint64_t failed = 0;          // 502: retries used up
  uint64_t stream_errors = 0;   // streams ended with an error event
  uint64_t client_cancels = 0;  // clients gone before their answer ended
};

struct RouterGauges {
  int64_t active = 0;  // requests queued or proxied
  int64_t queued = 0;
  int64_t queue_capacity = 0;
  int64_t connections = 0;  // open client connections on the front endpoint
  bool draining = false;
};

class RouterMetrics {
 public:
  RouterMetrics();
  // Any thread.
  void ObserveDispatch(double seconds) { dispatch_.Observe(seconds); }
  void ObserveRelay(double seconds) { relay_.Observe(seconds); }

  std::string Render(const std::vector<Replica>& replicas, const RouterCounters& counters,
                     const RouterGauges& gauges) const;

 private:
  Histogram dispatch_, relay_;
};

}  // namespace kiln
