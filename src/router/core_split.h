// The core sets of `kiln launch`'s replicas: split from the CPUs this process may use, or
// parsed from --core-sets and checked. Every error names its cause (more replicas than cores,
// overlapping sets, a core outside the allowed set).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "util/cpu_topology.h"

namespace kiln {

using CoreSets = std::vector<std::vector<int>>;

// N disjoint sets of whole physical cores (SMT siblings stay together), each inside one NUMA
// node where the node has room. `cpus_per_replica` 0: an equal share of the physical cores
// (the rest stay unused). Throws kiln::Error when the cores do not go round.
CoreSets SplitCores(const std::vector<CpuPlace>& allowed, int replicas, int cpus_per_replica);

// "0-1,2-3" (one set per item) or "0-1,8-9;2-3,10-11" (sets separated by ';' when a set needs
// commas). Throws kiln::Error on bad syntax.
CoreSets ParseCoreSets(std::string_view spec);

// Throws kiln::Error when sets overlap, are empty, or use a CPU outside `allowed`.
void CheckCoreSets(const CoreSets& sets, const std::vector<int>& allowed);

}  // namespace kiln
