// One supervised `kiln serve` replica as the router sees it: its process, where it listens,
// its state in the rotation and its load. Owned by the Supervisor; touched on the router's
// loop thread only.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "http/client/http_client.h"
#include "util/child_process.h"

namespace kiln {

enum class ReplicaState {
  kStarting,   // spawned, not yet answering /health
  kReady,      // in rotation
  kUnhealthy,  // alive but failing probes: out of rotation
  kDead,       // exited; restarted after its backoff
  kStopped,    // shut down by the router
};

const char* ReplicaStateName(ReplicaState s);

struct Replica {
  using Clock = std::chrono::steady_clock;

  int index = 0;
  std::vector<int> cores;
  ReplicaState state = ReplicaState::kDead;
  std::unique_ptr<ChildProcess> process;
  uint16_t port = 0;
  // Replaced at each start; a request keeps the client it was sent on.
  std::shared_ptr<http::HttpClient> proxy;
  std::shared_ptr<http::HttpClient> probe;
  uint64_t generation = 0;  // bumped at each start: answers for an older process are ignored
  bool ever_ready = false;

  int64_t outstanding = 0;  // generation requests sent, not yet ended
  int64_t reported = 0;     // running + waiting, from its last /metrics
  int64_t capacity = 0;     // max_concurrent_requests + max_queue, from its /info
  std::string info;         // its /info body

  bool probe_in_flight = false;
  int failed_probes = 0;
  Clock::time_point started_at, ready_since, unhealthy_since, next_probe, restart_at;
  std::chrono::milliseconds backoff{0};

  uint64_t requests = 0;  // dispatched to it
  uint64_t failures = 0;  // requests that failed on it (connection lost, died mid-stream)
  uint64_t restarts = 0;
  std::string last_exit;  // how its last process ended

  bool available() const { return state == ReplicaState::kReady; }
};

}  // namespace kiln
