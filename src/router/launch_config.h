// Everything `kiln launch` configures: the replicas (what each `kiln serve` is started with and
// where it runs), the front endpoint, health checking, admission and retries. Filled from
// flags in cli/launch_command.cc.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "http/server_options.h"
#include "router/core_split.h"

namespace kiln {

using Millis = std::chrono::milliseconds;

struct LaunchConfig {
  std::string exe;                      // the `kiln` binary the replicas run
  std::vector<std::string> serve_args;  // every replica's `kiln serve` flags but port and cores
  CoreSets core_sets;                   // one per replica
  http::ServerOptions http;             // the front endpoint
  std::string api_key;                  // guards the router's /info, /metrics, /v1/status
  std::string version = "0.1.0";
  // Traces of the router's own span per request (the replicas get the same flags).
  std::string otlp_endpoint;  // empty: none
  std::string otlp_service_name = "kiln";

  Millis health_interval{1000};           // between probes of a ready replica
  Millis health_timeout{1000};            // a probe unanswered this long fails
  Millis restart_unhealthy_after{30000};  // an unhealthy (hung) replica is killed after this
  Millis startup_timeout{300000};         // from spawn to ready, else killed
  Millis restart_backoff_min{500};        // first restart delay; doubles per crash
  Millis restart_backoff_max{30000};
  Millis queue_timeout{30000};  // a queued request waits this long for a replica, then 503
  Millis drain_timeout{90000};  // SIGTERM: requests in flight get this long

  int max_retries = 2;        // re-dispatches of a request whose replica failed before a byte
  int64_t router_queue = 64;  // requests waiting in the router when every replica is full
  bool prefix_affinity = false;
  size_t prefix_affinity_chars = 512;
  int64_t prefix_affinity_slack = 8;
};

}  // namespace kiln
