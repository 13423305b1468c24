#include "router/balancer.h"

namespace kiln {

uint64_t RendezvousWeight(uint64_t key, uint64_t replica) {
  // splitmix64 of the pair: cheap and well spread.
  uint64_t z = key ^ (replica * 0x9E3779B97F4A7C15ULL + 0x632BE59BD9B4E019ULL);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

std::optional<size_t> Balancer::Pick(const std::vector<ReplicaLoad>& replicas,
                                     std::optional<uint64_t> prefix_key) {
  const std::optional<size_t> least = LeastLoaded(replicas);
  if (!least || !prefix_key) return least;
  const std::optional<size_t> affine = ByAffinity(replicas, *prefix_key, replicas[*least].load());
  return affine ? affine : least;
}

std::optional<size_t> Balancer::LeastLoaded(const std::vector<ReplicaLoad>& replicas) {
  std::optional<size_t> best;
  const size_t n = replicas.size();
  for (size_t k = 0; k < n; ++k) {
    const size_t i = (cursor_ + k) % n;
    const ReplicaLoad& r = replicas[i];
    if (!r.available || r.excluded || !r.has_room()) continue;
    if (!best || r.load() < replicas[*best].load()) best = i;
  }
  if (best) cursor_ = *best + 1;
  return best;
}

std::optional<size_t> Balancer::ByAffinity(const std::vector<ReplicaLoad>& replicas, uint64_t key,
                                           int64_t least_load) {
  std::optional<size_t> best;
  uint64_t best_weight = 0;
  for (size_t i = 0; i < replicas.size(); ++i) {
    const ReplicaLoad& r = replicas[i];
    if (!r.available || r.excluded) continue;
    const uint64_t w = RendezvousWeight(key, i);
    if (!best || w > best_weight) {
      best = i;
      best_weight = w;
    }
  }
  if (!best) return std::nullopt;
  const ReplicaLoad& r = replicas[*best];
  if (!r.has_room() || r.load() > least_load + affinity_slack_) return std::nullopt;
  return best;
}

}  // namespace kiln
