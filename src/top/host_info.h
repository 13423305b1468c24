// The machine `kiln top` runs on, for its header line: CPU model, memory, load average (from
// /proc/cpuinfo, /proc/meminfo, /proc/loadavg; fields stay empty or 0 where unreadable).
#pragma once

#include <cstdint>
#include <string>

namespace kiln::top {

struct HostInfo {
  std::string cpu_model;
  int cpus = 0;  // online logical CPUs
  int64_t mem_total_bytes = 0, mem_available_bytes = 0;
  double load1 = 0.0, load5 = 0.0, load15 = 0.0;
};

HostInfo ReadHostInfo();

}  // namespace kiln::top
