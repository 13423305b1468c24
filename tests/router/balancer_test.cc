#include "router/balancer.h"

#include <gtest/gtest.h>

#include <map>

namespace kiln {
namespace {

ReplicaLoad Ready(int64_t outstanding, int64_t capacity = 4, int64_t reported = 0) {
  ReplicaLoad r;
  r.available = true;
  r.outstanding = outstanding;
  r.capacity = capacity;
  r.reported = reported;
  return r;
}

TEST(Balancer, LeastOutstandingWins) {
  Balancer b;
  EXPECT_EQ(b.Pick({Ready(3), Ready(1), Ready(2)}, std::nullopt), 1u);
}

TEST(Balancer, ReportedQueueCountsWhenLarger) {
  // Replica 0 has nothing from us but reports 3 running (traffic from elsewhere).
  Balancer b;
  EXPECT_EQ(b.Pick({Ready(0, 8, 3), Ready(1)}, std::nullopt), 1u);
}

TEST(Balancer, TiesGoRoundRobin) {
  Balancer b;
  std::map<size_t, int> picks;
  for (int i = 0; i < 6; ++i) ++picks[*b.Pick({Ready(0), Ready(0), Ready(0)}, std::nullopt)];
  EXPECT_EQ(picks[0], 2);
  EXPECT_EQ(picks[1], 2);
  EXPECT_EQ(picks[2], 2);
}

TEST(Balancer, SkipsFullUnavailableAndExcluded) {
  Balancer b;
  ReplicaLoad down = Ready(0);
  down.available = false;
  ReplicaLoad excluded = Ready(0);
  excluded.excluded = true;
  EXPECT_EQ(b.Pick({Ready(4, 4), down, excluded, Ready(3, 4)}, std::nullopt), 3u);
  EXPECT_FALSE(b.Pick({Ready(4, 4), down, excluded}, std::nullopt).has_value());
  // Capacity 0: unknown, never full.
  EXPECT_EQ(b.Pick({Ready(100, 0)}, std::nullopt), 0u);
}

TEST(Balancer, PrefixAffinityIsStableAndGivesWayWhenBusy) {
  Balancer b(/*affinity_slack=*/2);
  const std::vector<ReplicaLoad> idle = {Ready(0, 16), Ready(0, 16), Ready(0, 16)};
  const size_t home = *b.Pick(idle, 42);
  for (int i = 0; i < 5; ++i) EXPECT_EQ(b.Pick(idle, 42), home);
  // Different keys spread over the replicas.
  std::map<size_t, int> spread;
  for (uint64_t key = 0; key < 300; ++key) ++spread[*b.Pick(idle, key)];
  for (size_t i = 0; i < 3; ++i) EXPECT_GT(spread[i], 60) << i;
  // Home busier than the least loaded by more than the slack: least loaded instead.
  std::vector<ReplicaLoad> busy = idle;
  busy[home].outstanding = 3;
  EXPECT_NE(b.Pick(busy, 42), home);
  busy[home].outstanding = 2;
  EXPECT_EQ(b.Pick(busy, 42), home);
}

TEST(Balancer, AffinityMovesOnlyTheLostReplicasKeys) {
  Balancer b(/*affinity_slack=*/100);
  std::vector<ReplicaLoad> all = {Ready(0, 99), Ready(0, 99), Ready(0, 99)};
  std::vector<ReplicaLoad> without1 = all;
  without1[1].available = false;
  for (uint64_t key = 0; key < 200; ++key) {
    const size_t before = *b.Pick(all, key);
    if (before != 1) {
      EXPECT_EQ(b.Pick(without1, key), before) << key;
    }
  }
}

}  // namespace
}  // namespace kiln
