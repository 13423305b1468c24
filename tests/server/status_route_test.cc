#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "server/server_fixture.h"

namespace kiln::testing {
namespace {

using nlohmann::json;

class StatusRouteTest : public ServerTest {};

TEST_F(StatusRouteTest, ReportsEverythingTheMonitorShows) {
  config_.weight_bytes = 12345;
  StartServer();
  ASSERT_EQ(Post("/generate", R"({"inputs": "x", "parameters": {"max_new_tokens": 3}})").status,
            200);
  ASSERT_EQ(Post("/generate", R"({"inputs": "x", "parameters": {"top_k": 0}})").status, 422);
  EXPECT_EQ(Get("/nope").status, 404);
  HttpResult r = Get("/v1/status");
  ASSERT_EQ(r.status, 200);
  const json j = r.Json();
  EXPECT_EQ(j["object"], "kiln.status");
  EXPECT_EQ(j["model"], "test-model");
  EXPECT_TRUE(j["version"].is_string());
  EXPECT_GE(j["uptime_s"].get<double>(), 0.0);
  ASSERT_EQ(j["cores"].size(), 2u);
  EXPECT_EQ(j["cores"][0]["id"], 3);
  EXPECT_DOUBLE_EQ(j["cores"][0]["cpu_seconds"].get<double>(), 1.25);
  EXPECT_GT(j["memory"]["rss_bytes"].get<int64_t>(), 0);
  EXPECT_EQ(j["memory"]["weight_bytes"], 12345);
  EXPECT_EQ(j["kv_cache"]["blocks_total"], 100);
  EXPECT_EQ(j["kv_cache"]["blocks_used"], 0);
  EXPECT_EQ(j["kv_cache"]["blocks_free"], 100);
  EXPECT_TRUE(j["kv_cache"].contains("blocks_cached"));
  EXPECT_EQ(j["sequences"]["running"], 0);
  EXPECT_EQ(j["sequences"]["waiting"], 0);
  EXPECT_TRUE(j["tokens"].contains("prompt"));
  EXPECT_TRUE(j["tokens"].contains("generated"));
  // The two generations, the 404; this request is counted when it answers.
  EXPECT_EQ(j["requests"]["total"], 3);
  EXPECT_EQ(j["requests"]["generation"], 2);
  EXPECT_EQ(j["requests"]["status_4xx"], 2);
  EXPECT_EQ(j["requests"]["status_5xx"], 0);
  EXPECT_EQ(j["requests"]["status_429"], 0);
  EXPECT_EQ(j["latency"]["window_s"], 60.0);
  EXPECT_EQ(j["latency"]["ttft_s"]["count"], 1);
  EXPECT_EQ(j["latency"]["itl_s"]["count"], 2);
  EXPECT_GE(j["latency"]["ttft_s"]["p95"].get<double>(),
            j["latency"]["ttft_s"]["p50"].get<double>());
}

TEST_F(StatusRouteTest, InTheOpenApiDocumentAndBehindTheApiKey) {
  config_.api_key = "k";
  StartServer();
  EXPECT_EQ(Get("/v1/status").status, 401);
  const json doc = Get("/api-doc/openapi.json", "Authorization: Bearer k\r\n").Json();
  EXPECT_TRUE(doc["paths"].contains("/v1/status"));
  EXPECT_EQ(Get("/v1/status", "Authorization: Bearer k\r\n").status, 200);
}

}  // namespace
}  // namespace kiln::testing
