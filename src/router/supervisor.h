// Starts the replicas (each `kiln serve` pinned to its core set, on a free loopback port),
// gates them into rotation once /health answers, probes them (a replica whose probe fails or
// times out leaves the rotation; one unhealthy for too long is killed), and restarts the ones
// that exit, with exponential backoff. Runs on the router's loop thread: Tick() every 100 ms.
#pragma once

#include <boost/asio/io_context.hpp>
#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "router/launch_config.h"
#include "router/replica.h"

namespace kiln {

// GET `target` on `client`; `done(status, body)` runs once on the loop thread, status 0 when
// the request did not complete. `api_key`, when set, is sent as a bearer token: the replicas
// get the router's --api-key, so their /info, /metrics and /v1/status need it.
void FetchText(http::HttpClient& client, const std::string& target, const std::string& api_key,
               std::function<void(int status, std::string body)> done);

class Supervisor {
 public:
  using Clock = std::chrono::steady_clock;
  struct Hooks {
    std::function<void(Replica&)> on_available;    // entered the rotation
    std::function<void(Replica&)> on_unavailable;  // left it (unhealthy, exited)
  };

  Supervisor(boost::asio::io_context& loop, const LaunchConfig& config, Hooks hooks);
  ~Supervisor();  // kills and reaps every child still running

  // Spawns every replica. Children die with the thread that forked them (PR_SET_PDEATHSIG):
  // call this, like Tick, on the long-lived loop thread.
  void StartAll();
  void Tick(Clock::time_point now);
  // A request just failed on `r`: probe it now rather than at its next interval.
  void Suspect(Replica& r);
  // No more restarts; SIGTERM to every child (each drains, then exits).
  void BeginStop();
  void KillAll();
  bool AllExited();

  std::vector<Replica>& replicas() { return replicas_; }
  const std::vector<Replica>& replicas() const { return replicas_; }
  // Every replica has been ready once (the launch's readiness gate).
  bool all_started() const { return all_started_; }
  // Why the launch cannot start (a replica exited before it was first ready); empty if fine.
  const std::string& startup_failure() const { return startup_failure_; }

 private:
  void Spawn(Replica& r, Clock::time_point now);
  void CheckExit(Replica& r, Clock::time_point now);
  void Probe(Replica& r);
  void OnProbe(Replica& r, int status);
  void MarkReady(Replica& r);
  void MarkUnhealthy(Replica& r, const std::string& why);
  void FetchLoad(Replica& r);
  void Get(Replica& r, const std::string& target,
           std::function<void(Replica&, int status, std::string body)> done);

  boost::asio::io_context& loop_;
  const LaunchConfig& config_;
  Hooks hooks_;
  std::vector<Replica> replicas_;
  bool stopping_ = false;
  bool all_started_ = false;
  std::string startup_failure_;
};

}  // namespace kiln
