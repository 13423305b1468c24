// Where each CPU sits: its physical core (SMT siblings share one) and its NUMA node, read from
// Linux sysfs, so that core sets can be split without separating siblings or straddling nodes.
#pragma once

#include <string>
#include <vector>

namespace kiln {

struct CpuPlace {
  int cpu = 0;   // logical CPU id, as in sched_setaffinity
  int core = 0;  // id of its physical core: the lowest CPU id among its SMT siblings
  int node = 0;  // NUMA node (0 when the kernel reports none)
};

// The places of `cpus` (sorted by node, then core, then cpu), from `sysfs_cpu_root`
// (/sys/devices/system/cpu; tests pass a folder of their own). A CPU whose topology files are
// missing counts as a core of its own on node 0.
std::vector<CpuPlace> ReadCpuTopology(
    const std::vector<int>& cpus, const std::string& sysfs_cpu_root = "/sys/devices/system/cpu");

}  // namespace kiln
