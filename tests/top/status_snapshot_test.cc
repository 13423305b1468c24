#include "top/status_snapshot.h"

#include <gtest/gtest.h>

namespace kiln::top {
namespace {

constexpr char kStatus[] = R"({
  "object": "kiln.status", "model": "tiny", "version": "0.1.0", "uptime_s": 12.5,
  "draining": false,
  "cores": [{"id": 0, "cpu_seconds": 3.5}, {"id": 2, "cpu_seconds": 1.0}],
  "memory": {"rss_bytes": 1048576, "weight_bytes": 4096},
  "kv_cache": {"blocks_total": 64, "blocks_used": 10, "blocks_free": 54, "blocks_cached": 3},
  "sequences": {"running": 2, "waiting": 1},
  "tokens": {"prompt": 500, "generated": 250},
  "requests": {"total": 40, "generation": 30, "in_flight": 3, "status_4xx": 5,
               "status_5xx": 1, "status_429": 2},
  "latency": {"window_s": 60, "ttft_s": {"p50": 0.01, "p95": 0.05, "count": 9},
              "itl_s": {"p50": 0.002, "p95": 0.004, "count": 90}}
})";

TEST(ParseStatus, ReadsEveryField) {
  const ParsedStatus p = ParseStatus(kStatus);
  ASSERT_TRUE(p.snapshot) << p.error;
  const StatusSnapshot& s = *p.snapshot;
  EXPECT_EQ(s.model, "tiny");
  EXPECT_EQ(s.version, "0.1.0");
  EXPECT_DOUBLE_EQ(s.uptime_s, 12.5);
  ASSERT_EQ(s.cores.size(), 2u);
  EXPECT_EQ(s.cores[1].id, 2);
  EXPECT_DOUBLE_EQ(s.cores[0].cpu_seconds, 3.5);
  EXPECT_EQ(s.rss_bytes, 1048576);
  EXPECT_EQ(s.weight_bytes, 4096);
  EXPECT_EQ(s.kv_total, 64);
  EXPECT_EQ(s.kv_used, 10);
  EXPECT_EQ(s.kv_free, 54);
  EXPECT_EQ(s.kv_cached, 3);
  EXPECT_EQ(s.running, 2);
  EXPECT_EQ(s.waiting, 1);
  EXPECT_EQ(s.prompt_tokens, 500);
  EXPECT_EQ(s.generated_tokens, 250);
  EXPECT_EQ(s.requests, 40);
  EXPECT_EQ(s.generation_requests, 30);
  EXPECT_EQ(s.in_flight, 3);
  EXPECT_EQ(s.status_4xx, 5);
  EXPECT_EQ(s.status_5xx, 1);
  EXPECT_EQ(s.status_429, 2);
  EXPECT_DOUBLE_EQ(s.latency_window_s, 60.0);
  EXPECT_DOUBLE_EQ(s.ttft.p95, 0.05);
  EXPECT_EQ(s.itl.count, 90);
}

TEST(ParseStatus, MissingMembersReadAsZero) {
  const ParsedStatus p = ParseStatus(R"({"object": "kiln.status", "model": "m",
                                          "kv_cache": {"blocks_total": "many"}})");
  ASSERT_TRUE(p.snapshot);
  EXPECT_EQ(p.snapshot->model, "m");
  EXPECT_EQ(p.snapshot->kv_total, 0);
  EXPECT_TRUE(p.snapshot->cores.empty());
}

TEST(ParseStatus, RefusesWhatIsNotAKilnStatus) {
  for (const char* body :
       {"<html>hello</html>", "", "[1, 2]", R"({"object": "list"})", R"({"model": "m"})"}) {
    const ParsedStatus p = ParseStatus(body);
    EXPECT_FALSE(p.snapshot) << body;
    EXPECT_NE(p.error.find("not a Kiln server"), std::string::npos) << body;
  }
}

TEST(ParseStatusDocument, AServerIsOneEntry) {
  const std::vector<ReplicaStatus> d = ParseStatusDocument(kStatus);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].index, -1);
  ASSERT_TRUE(d[0].status.snapshot);
  EXPECT_EQ(d[0].status.snapshot->model, "tiny");
}

TEST(ParseStatusDocument, ARouterIsOneEntryPerReplica) {
  const std::string body =
      std::string(R"({"object": "kiln.router_status", "replicas": [)") +
      R"({"index": 0, "port": 4001, "state": "starting"},)" +
      std::string(kStatus).insert(1, R"("index": 1, "port": 4002, "state": "ready",)") + "]}";
  const std::vector<ReplicaStatus> d = ParseStatusDocument(body);
  ASSERT_EQ(d.size(), 2u);
  EXPECT_EQ(d[0].index, 0);
  EXPECT_EQ(d[0].state, "starting");
  EXPECT_FALSE(d[0].status.snapshot);
  EXPECT_NE(d[0].status.error.find("starting"), std::string::npos);
  EXPECT_EQ(d[1].port, 4002);
  ASSERT_TRUE(d[1].status.snapshot);
  EXPECT_EQ(d[1].status.snapshot->kv_total, 64);
}

TEST(ParseStatusDocument, NotJsonIsNotKiln) {
  const std::vector<ReplicaStatus> d = ParseStatusDocument("<html>");
  ASSERT_EQ(d.size(), 1u);
  EXPECT_FALSE(d[0].status.snapshot);
  EXPECT_NE(d[0].status.error.find("not a Kiln server"), std::string::npos);
}

}  // namespace
}  // namespace kiln::top
