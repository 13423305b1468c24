#include "router/core_split.h"

#include <gtest/gtest.h>

#include "util/error.h"

namespace kiln {
namespace {

// `cores` physical cores of `threads` CPUs each, numbered like Linux does on x86 (the second
// sibling of core c is CPU c + cores), spread over `nodes` nodes in equal runs.
std::vector<CpuPlace> Machine(int cores, int threads, int nodes) {
  std::vector<CpuPlace> places;
  for (int t = 0; t < threads; ++t) {
    for (int c = 0; c < cores; ++c) places.push_back({c + t * cores, c, c * nodes / cores});
  }
  return places;
}

std::string Describe(const CoreSets& sets) {
  std::string out;
  for (const auto& s : sets) {
    if (!out.empty()) out += " | ";
    for (size_t i = 0; i < s.size(); ++i) out += (i ? "," : "") + std::to_string(s[i]);
  }
  return out;
}

std::string ErrorOf(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(SplitCores, EqualShareOfPlainCores) {
  EXPECT_EQ(Describe(SplitCores(Machine(2, 1, 1), 2, 0)), "0 | 1");
  EXPECT_EQ(Describe(SplitCores(Machine(8, 1, 1), 3, 0)), "0,1 | 2,3 | 4,5");  // 6, 7 unused
  EXPECT_EQ(Describe(SplitCores(Machine(8, 1, 1), 1, 0)), "0,1,2,3,4,5,6,7");
}

TEST(SplitCores, KeepsSmtSiblingsTogether) {
  // 4 cores x 2 threads: CPU c and c + 4 are siblings.
  EXPECT_EQ(Describe(SplitCores(Machine(4, 2, 1), 2, 0)), "0,1,4,5 | 2,3,6,7");
  EXPECT_EQ(Describe(SplitCores(Machine(4, 2, 1), 4, 2)), "0,4 | 1,5 | 2,6 | 3,7");
  EXPECT_NE(ErrorOf([] { SplitCores(Machine(4, 2, 1), 2, 3); }).find("SMT siblings"),
            std::string::npos);
}

TEST(SplitCores, DoesNotStraddleNumaNodes) {
  // 6 cores on 2 nodes (0-2, 3-5): two replicas of 2 cores fit one per node, not 0-1 and 2-3.
  EXPECT_EQ(Describe(SplitCores(Machine(6, 1, 2), 2, 2)), "0,1 | 3,4");
  // Three replicas of 2: the third takes what is left of both nodes.
  EXPECT_EQ(Describe(SplitCores(Machine(6, 1, 2), 3, 2)), "0,1 | 3,4 | 2,5");
}

TEST(SplitCores, ClearErrors) {
  const std::string more = ErrorOf([] { SplitCores(Machine(2, 1, 1), 3, 0); });
  EXPECT_NE(more.find("--replicas 3 is more than the 2 physical cores"), std::string::npos) << more;
  EXPECT_NE(more.find("0-1"), std::string::npos) << more;
  const std::string big = ErrorOf([] { SplitCores(Machine(4, 1, 1), 2, 3); });
  EXPECT_NE(big.find("needs 6 CPUs"), std::string::npos) << big;
  EXPECT_NE(ErrorOf([] { SplitCores(Machine(2, 1, 1), 0, 0); }), "");
}

TEST(ParseCoreSets, CommaOrSemicolon) {
  EXPECT_EQ(Describe(ParseCoreSets("0-1,2-3")), "0,1 | 2,3");
  EXPECT_EQ(Describe(ParseCoreSets("0-1,8-9;2-3,10-11")), "0,1,8,9 | 2,3,10,11");
  EXPECT_EQ(Describe(ParseCoreSets("5")), "5");
  EXPECT_NE(ErrorOf([] { ParseCoreSets("0-1,,2"); }), "");
  EXPECT_NE(ErrorOf([] { ParseCoreSets(""); }), "");
  EXPECT_NE(ErrorOf([] { ParseCoreSets("3-1"); }), "");
}

TEST(CheckCoreSets, OverlapAndOutsideAreNamed) {
  const std::vector<int> allowed = {0, 1, 2, 3};
  EXPECT_EQ(ErrorOf([&] { CheckCoreSets(ParseCoreSets("0-1,2-3"), allowed); }), "");
  const std::string overlap = ErrorOf([&] { CheckCoreSets(ParseCoreSets("0-1,1-2"), allowed); });
  EXPECT_NE(overlap.find("core sets overlap: replica 0 (0-1) and replica 1 (1-2) share CPU 1"),
            std::string::npos)
      << overlap;
  const std::string outside = ErrorOf([&] { CheckCoreSets(ParseCoreSets("0,7"), allowed); });
  EXPECT_NE(outside.find("uses CPU 7"), std::string::npos) << outside;
}

}  // namespace
}  // namespace kiln
