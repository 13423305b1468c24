#include "router/router_metrics.h"

#include <cstdio>

#include "router/replica.h"

namespace kiln {
namespace {

void Family(std::string& out, const char* name, const char* type, const char* help) {
  out += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
}

void Sample(std::string& out, const char* name, double value, const std::string& labels = "") {
  char buf[48];
  std::snprintf(buf, sizeof(buf), "%.10g", value);
  out += name;
  if (!labels.empty()) out += "{" + labels + "}";
  out += std::string(" ") + buf + "\n";
}

// One sample per replica of `field`.
template <typename F>
void PerReplica(std::string& out, const std::vector<Replica>& replicas, const char* name,
                const char* type, const char* help, F field) {
  Family(out, name, type, help);
  for (const Replica& r : replicas) {
    Sample(out, name, static_cast<double>(field(r)), "replica=\"" + std::to_string(r.index) + "\"");
  }
}

}  // namespace

// 5 us to 9 s.
RouterMetrics::RouterMetrics()
    : dispatch_(Histogram::GeometricBuckets(5e-6, 36)),
      relay_(Histogram::GeometricBuckets(5e-6, 36)) {}

std::string RouterMetrics::Render(const std::vector<Replica>& replicas, const RouterCounters& c,
                                  const RouterGauges& g) const {
  std::string out;
  PerReplica(out, replicas, "kiln_router_replica_requests_total", "counter",
             "Requests sent to each replica (re-dispatches included)",
             [](const Replica& r) { return r.requests; });
  PerReplica(out, replicas, "kiln_router_replica_failures_total", "counter",
             "Requests whose replica connection failed",
             [](const Replica& r) { return r.failures; });
  PerReplica(out, replicas, "kiln_router_replica_restarts_total", "counter",
             "Times each replica was restarted after it exited",
             [](const Replica& r) { return r.restarts; });
  PerReplica(out, replicas, "kiln_router_replica_up", "gauge", "1 while the replica is in rotation",
             [](const Replica& r) { return r.available(); });
  PerReplica(out, replicas, "kiln_router_replica_outstanding", "gauge",
             "Generation requests the router has outstanding on each replica",
             [](const Replica& r) { return r.outstanding; });
  PerReplica(out, replicas, "kiln_router_replica_capacity", "gauge",
             "Requests each replica admits (max_concurrent_requests + max_queue)",
             [](const Replica& r) { return r.capacity; });
  auto scalar = [&out](const char* name, const char* type, const char* help, double v) {
    Family(out, name, type, help);
    Sample(out, name, v);
  };
  scalar("kiln_router_retries_total", "counter",
         "Requests re-dispatched after a replica failed them before their first byte",
         static_cast<double>(c.retries));
  scalar("kiln_router_rejected_total", "counter", "Requests refused with 429 (all replicas full)",
         static_cast<double>(c.rejected));
  scalar("kiln_router_unavailable_total", "counter",
         "Requests refused with 503 (no replica in time, or draining)",
         static_cast<double>(c.unavailable));
  scalar("kiln_router_failed_total", "counter", "Requests answered 502 after their retries",
         static_cast<double>(c.failed));
  scalar("kiln_router_stream_errors_total", "counter",
         "Streams ended with an error event because their replica failed midway",
         static_cast<double>(c.stream_errors));
  scalar("kiln_router_client_cancels_total", "counter",
         "Clients that left before their answer ended", static_cast<double>(c.client_cancels));
  scalar("kiln_router_requests_active", "gauge", "Requests in the router (queued or proxied)",
         static_cast<double>(g.active));
  scalar("kiln_router_queue_size", "gauge", "Requests waiting for a replica with room",
         static_cast<double>(g.queued));
  scalar("kiln_router_queue_capacity", "gauge", "Requests the router queue holds before 429",
         static_cast<double>(g.queue_capacity));
  scalar("kiln_router_http_connections", "gauge", "Open client connections",
         static_cast<double>(g.connections));
  scalar("kiln_router_draining", "gauge", "1 while the router drains before exit",
         g.draining ? 1.0 : 0.0);
  dispatch_.Render(out, "kiln_router_dispatch_seconds",
                   "Arrival at the router to the request sent to a replica (s)");
  relay_.Render(out, "kiln_router_relay_seconds",
                "A streamed chunk's arrival from a replica to its hand-off to the client (s)");
  return out;
}

}  // namespace kiln
