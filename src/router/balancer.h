// Which replica takes the next request: the least loaded one that has room (load = requests
// the router has outstanding on it, or what the replica itself last reported running + waiting
// when that is more), ties broken round-robin; or, with prefix affinity, the replica a prompt
// prefix hashes to (rendezvous hashing, so a replica leaving moves only its own prefixes),
// unless it is full or more than `affinity_slack` requests busier than the least loaded.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

namespace kiln {

struct ReplicaLoad {
  bool available = false;   // ready and in rotation
  int64_t outstanding = 0;  // generation requests the router has sent and not seen end
  int64_t reported = 0;     // running + waiting from the replica's last report
  int64_t capacity = 0;     // requests it admits at most (0: unknown, no bound)
  bool excluded = false;    // already failed this request

  int64_t load() const { return outstanding > reported ? outstanding : reported; }
  bool has_room() const { return capacity <= 0 || outstanding < capacity; }
};

class Balancer {
 public:
  explicit Balancer(int64_t affinity_slack = 8) : affinity_slack_(affinity_slack) {}

  // The index of the chosen replica, or nullopt when none is available with room.
  std::optional<size_t> Pick(const std::vector<ReplicaLoad>& replicas,
                             std::optional<uint64_t> prefix_key);

 private:
  std::optional<size_t> LeastLoaded(const std::vector<ReplicaLoad>& replicas);
  std::optional<size_t> ByAffinity(const std::vector<ReplicaLoad>& replicas, uint64_t key,
                                   int64_t least_load);

  int64_t affinity_slack_;
  size_t cursor_ = 0;  // round-robin start among equally loaded replicas
};

// A 64-bit mix of a prefix key with a replica index (rendezvous weight).
uint64_t RendezvousWeight(uint64_t key, uint64_t replica);

}  // namespace kiln
