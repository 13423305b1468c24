// The router's own Prometheus metrics (kiln_router_*): per-replica requests, failures,
// restarts, state and outstanding requests; retries, refusals, queue; the router's added
// latency (arrival -> sent to a replica; a replica's chunk -> handed to the client).
#pragma once

#include <string>
#include <vector>

#include "util/histogram.h"

namespace kiln {

struct Replica;
struct RouterCounters;

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
