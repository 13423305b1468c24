#include "router/core_split.h"

#include <algorithm>
#include <map>

#include "util/core_set.h"
#include "util/error.h"
#include "util/log.h"

namespace kiln {
namespace {

// The CPUs of one physical core, and the node it is on.
struct PhysicalCore {
  int node = 0;
  std::vector<int> cpus;
};

std::vector<PhysicalCore> GroupByCore(const std::vector<CpuPlace>& allowed) {
  std::vector<PhysicalCore> cores;
  std::map<std::pair<int, int>, size_t> index;  // (node, core) -> position in `cores`
  for (const CpuPlace& p : allowed) {
    auto [it, inserted] = index.emplace(std::make_pair(p.node, p.core), cores.size());
    if (inserted) cores.push_back({p.node, {}});
    cores[it->second].cpus.push_back(p.cpu);
  }
  return cores;
}

std::vector<int> Flatten(const std::vector<PhysicalCore>& cores, size_t from, size_t count) {
  std::vector<int> cpus;
  for (size_t i = from; i < from + count; ++i) {
    cpus.insert(cpus.end(), cores[i].cpus.begin(), cores[i].cpus.end());
  }
  std::sort(cpus.begin(), cpus.end());
  return cpus;
}

// Physical cores per replica: from --cores-per-replica (which must be whole cores), or an
// equal share.
size_t CoresPerReplica(const std::vector<PhysicalCore>& cores, int replicas, int cpus_per_replica) {
  const size_t threads = cores.front().cpus.size();
  if (cpus_per_replica == 0) return cores.size() / static_cast<size_t>(replicas);
  KILN_CHECK(cpus_per_replica % static_cast<int>(threads) == 0, "--cores-per-replica ",
             cpus_per_replica, " would split the SMT siblings of a core (", threads,
             " CPUs per core here): use a multiple of ", threads);
  return static_cast<size_t>(cpus_per_replica) / threads;
}

}  // namespace

CoreSets SplitCores(const std::vector<CpuPlace>& allowed, int replicas, int cpus_per_replica) {
  KILN_CHECK(replicas >= 1, "--replicas must be >= 1, not ", replicas);
  KILN_CHECK(cpus_per_replica >= 0, "--cores-per-replica must be >= 1");
  KILN_CHECK(!allowed.empty(), "no CPU is allowed to this process");
  std::vector<int> cpu_ids;
  for (const CpuPlace& p : allowed) cpu_ids.push_back(p.cpu);
  std::sort(cpu_ids.begin(), cpu_ids.end());
  const std::vector<PhysicalCore> cores = GroupByCore(allowed);
  KILN_CHECK(static_cast<size_t>(replicas) <= cores.size(), "--replicas ", replicas,
             " is more than the ", cores.size(), " physical cores this process may use (CPUs ",
             FormatCoreSet(cpu_ids), ")");
  const size_t per = CoresPerReplica(cores, replicas, cpus_per_replica);
  KILN_CHECK(per * static_cast<size_t>(replicas) <= cores.size(), "--replicas ", replicas,
             " x --cores-per-replica ", cpus_per_replica, " needs ",
             per * static_cast<size_t>(replicas) * cores.front().cpus.size(),
             " CPUs; this process may use ", cpu_ids.size(), " (", FormatCoreSet(cpu_ids), ")");

  // Whole replicas inside each node first; what is left of every node is used only when the
  // nodes alone do not hold all replicas (such a replica straddles nodes).
  CoreSets sets;
  std::vector<PhysicalCore> leftover;
  for (size_t start = 0; start < cores.size();) {
    size_t end = start;
    while (end < cores.size() && cores[end].node == cores[start].node) ++end;
    size_t at = start;
    while (sets.size() < static_cast<size_t>(replicas) && end - at >= per) {
      sets.push_back(Flatten(cores, at, per));
      at += per;
    }
    leftover.insert(leftover.end(), cores.begin() + static_cast<long>(at),
                    cores.begin() + static_cast<long>(end));
    start = end;
  }
  if (sets.size() < static_cast<size_t>(replicas)) {
    log::Warn("the replicas do not fit inside NUMA nodes: some straddle two nodes");
    for (size_t at = 0; sets.size() < static_cast<size_t>(replicas); at += per) {
      sets.push_back(Flatten(leftover, at, per));
    }
  }
  return sets;
}

CoreSets ParseCoreSets(std::string_view spec) {
  KILN_CHECK(!spec.empty(), "--core-sets is empty");
  const char separator = spec.find(';') != std::string_view::npos ? ';' : ',';
  CoreSets sets;
  size_t start = 0;
  while (start <= spec.size()) {
    size_t end = spec.find(separator, start);
    if (end == std::string_view::npos) end = spec.size();
    sets.push_back(ParseCoreSet(spec.substr(start, end - start)));
    start = end + 1;
  }
  return sets;
}

void CheckCoreSets(const CoreSets& sets, const std::vector<int>& allowed) {
  std::map<int, size_t> owner;  // cpu -> replica
  for (size_t r = 0; r < sets.size(); ++r) {
    KILN_CHECK(!sets[r].empty(), "core set of replica ", r, " is empty");
    for (int cpu : sets[r]) {
      KILN_CHECK(std::binary_search(allowed.begin(), allowed.end(), cpu), "core set ",
                 FormatCoreSet(sets[r]), " of replica ", r, " uses CPU ", cpu,
                 ", which this process may not use (allowed: ", FormatCoreSet(allowed), ")");
      auto [it, inserted] = owner.emplace(cpu, r);
      KILN_CHECK(inserted, "core sets overlap: replica ", it->second, " (",
                 FormatCoreSet(sets[it->second]), ") and replica ", r, " (", FormatCoreSet(sets[r]),
                 ") share CPU ", cpu);
    }
  }
}

}  // namespace kiln
