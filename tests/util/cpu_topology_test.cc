#include "util/cpu_topology.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace kiln {
namespace {

namespace fs = std::filesystem;

// A fake /sys/devices/system/cpu: 4 CPUs, siblings (0,2) and (1,3), CPU 1 and 3 on node 1.
class FakeSysfs : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("kiln_sysfs_" + std::to_string(::getpid()));
    for (int cpu = 0; cpu < 4; ++cpu) {
      const fs::path dir = root_ / ("cpu" + std::to_string(cpu));
      fs::create_directories(dir / "topology");
      std::ofstream(dir / "topology" / "thread_siblings_list")
          << (cpu % 2 == 0 ? "0,2\n" : "1,3\n");
      fs::create_directories(dir / ("node" + std::to_string(cpu % 2)));
    }
  }
  void TearDown() override { fs::remove_all(root_); }
  fs::path root_;
};

TEST_F(FakeSysfs, ReadsSiblingsAndNodes) {
  const std::vector<CpuPlace> places = ReadCpuTopology({0, 1, 2, 3}, root_.string());
  ASSERT_EQ(places.size(), 4u);
  // Sorted by node, then core: node 0 holds core 0 (CPUs 0, 2), node 1 core 1 (CPUs 1, 3).
  EXPECT_EQ(places[0].cpu, 0);
  EXPECT_EQ(places[1].cpu, 2);
  EXPECT_EQ(places[1].core, 0);
  EXPECT_EQ(places[2].cpu, 1);
  EXPECT_EQ(places[2].node, 1);
  EXPECT_EQ(places[3].core, 1);
}

TEST_F(FakeSysfs, MissingFilesMeanOwnCoreOnNodeZero) {
  const std::vector<CpuPlace> places = ReadCpuTopology({9}, root_.string());
  ASSERT_EQ(places.size(), 1u);
  EXPECT_EQ(places[0].core, 9);
  EXPECT_EQ(places[0].node, 0);
}

TEST(CpuTopology, ThisMachine) {
  const std::vector<CpuPlace> places = ReadCpuTopology({0});
  ASSERT_EQ(places.size(), 1u);
  EXPECT_EQ(places[0].cpu, 0);
}

}  // namespace
}  // namespace kiln
