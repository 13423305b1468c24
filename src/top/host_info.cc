#include "top/host_info.h"

#include <unistd.h>

#include <fstream>
#include <sstream>

namespace kiln::top {
namespace {

std::string CpuModel() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) != 0) continue;
    const size_t colon = line.find(':');
    if (colon == std::string::npos) break;
    const size_t start = line.find_first_not_of(' ', colon + 1);
    return start == std::string::npos ? "" : line.substr(start);
  }
  return "";
}

// "MemTotal:  16318480 kB" -> bytes.
void ReadMemInfo(HostInfo& h) {
  std::ifstream in("/proc/meminfo");
  std::string key;
  int64_t kib = 0;
  std::string unit;
  while (in >> key >> kib) {
    std::getline(in, unit);
    if (key == "MemTotal:") h.mem_total_bytes = kib * 1024;
    if (key == "MemAvailable:") h.mem_available_bytes = kib * 1024;
  }
}

void ReadLoad(HostInfo& h) {
  std::ifstream in("/proc/loadavg");
  in >> h.load1 >> h.load5 >> h.load15;
}

}  // namespace

HostInfo ReadHostInfo() {
  HostInfo h;
  static const std::string model = CpuModel();  // /proc/cpuinfo is long on big machines
  h.cpu_model = model;
  h.cpus = static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN));
  ReadMemInfo(h);
  ReadLoad(h);
  return h;
}

}  // namespace kiln::top
