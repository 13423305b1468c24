#include "util/cpu_topology.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <tuple>

#include "util/core_set.h"

namespace kiln {
namespace {

std::string ReadLine(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  while (!line.empty() && (line.back() == '\n' || line.back() == ' ')) line.pop_back();
  return line;
}

// The lowest sibling of `cpu` (thread_siblings_list, e.g. "0,64" or "2-3").
int PhysicalCore(const std::filesystem::path& cpu_dir, int cpu) {
  const std::string siblings = ReadLine(cpu_dir / "topology" / "thread_siblings_list");
  if (siblings.empty()) return cpu;
  try {
    const std::vector<int> ids = ParseCoreSet(siblings);
    return ids.empty() ? cpu : ids.front();
  } catch (const std::exception&) {
    return cpu;
  }
}

// The node of `cpu`: its "nodeN" entry (a link to the node's folder).
int NumaNode(const std::filesystem::path& cpu_dir) {
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(cpu_dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.size() > 4 && name.compare(0, 4, "node") == 0 &&
        std::all_of(name.begin() + 4, name.end(), [](char c) { return c >= '0' && c <= '9'; })) {
      return std::stoi(name.substr(4));
    }
  }
  return 0;
}

}  // namespace

std::vector<CpuPlace> ReadCpuTopology(const std::vector<int>& cpus,
                                      const std::string& sysfs_cpu_root) {
  std::vector<CpuPlace> places;
  places.reserve(cpus.size());
  for (int cpu : cpus) {
    const std::filesystem::path dir =
        std::filesystem::path(sysfs_cpu_root) / ("cpu" + std::to_string(cpu));
    places.push_back({cpu, PhysicalCore(dir, cpu), NumaNode(dir)});
  }
  std::sort(places.begin(), places.end(), [](const CpuPlace& a, const CpuPlace& b) {
    return std::tie(a.node, a.core, a.cpu) < std::tie(b.node, b.core, b.cpu);
  });
  return places;
}

}  // namespace kiln
