#include <gtest/gtest.h>

#include <string>

#include "server/route_table.h"
#include "util/bearer_token.h"
#include "server/server_fixture.h"

namespace kiln::testing {
namespace {

using nlohmann::json;

class OpsRoutesTest : public ServerTest {};

TEST_F(OpsRoutesTest, HealthAndPing) {
  StartServer();
  for (const char* path : {"/health", "/ping", "/"}) {
    HttpResult r = Get(path);
    EXPECT_EQ(r.status, 200) << path;
    EXPECT_EQ(r.body, "");
  }
}

TEST_F(OpsRoutesTest, Info) {
  config_.max_concurrent_requests = 7;
  config_.limits.max_input_tokens = 100;
  config_.limits.max_total_tokens = 200;
  StartServer();
  json j = Get("/info").Json();
  EXPECT_EQ(j["model_id"], "test-model");
  EXPECT_EQ(j["max_concurrent_requests"], 7);
  EXPECT_EQ(j["max_input_tokens"], 100);
  EXPECT_EQ(j["max_total_tokens"], 200);
  EXPECT_EQ(j["max_best_of"], 2);
  EXPECT_EQ(j["max_stop_sequences"], 4);
  EXPECT_EQ(j["max_client_batch_size"], 4);
  for (const char* field : {"model_sha", "model_pipeline_tag", "validation_workers", "router",
                            "version", "sha", "docker_label"}) {
    EXPECT_TRUE(j.contains(field)) << field;
  }
}

TEST_F(OpsRoutesTest, MetricsHaveTgiNamesAndLatencyHistograms) {
  StartServer();
  ASSERT_EQ(Post("/generate", R"({"inputs": "x", "parameters": {"max_new_tokens": 3}})").status,
            200);
  ASSERT_EQ(Post("/generate", R"({"inputs": "x", "parameters": {"top_k": 0}})").status, 422);
  HttpResult r = Get("/metrics");
  ASSERT_EQ(r.status, 200);
  EXPECT_TRUE(r.HasHeader("Content-Type: text/plain; version=0.0.4"));
  for (const char* line :
       {"tgi_request_count 2\n", "tgi_request_success 1\n",
        "tgi_request_failure{err=\"validation\"} 1\n", "# TYPE tgi_queue_size gauge\n",
        "tgi_batch_current_size 0\n", "tgi_request_duration_count 1\n",
        "tgi_request_generated_tokens_sum 3\n", "tgi_request_input_length_count 1\n",
        "tgi_request_mean_time_per_token_duration_count 1\n",
        "kiln_time_to_first_token_seconds_count 1\n", "kiln_inter_token_latency_seconds_count 2\n",
        "kiln_request_queue_time_seconds_count 1\n", "kiln_kv_cache_blocks_used 0\n",
        "kiln_kv_cache_blocks_total 100\n", "kiln_kv_cache_usage_ratio 0\n",
        "kiln_requests_running 0\n", "tgi_request_duration_bucket{le=\"0.00015\"}",
        "tgi_request_duration_bucket{le=\"+Inf\"} 1\n"}) {
    EXPECT_NE(r.body.find(line), std::string::npos) << line;
  }
}

TEST_F(OpsRoutesTest, OpenApiDocumentAndDocs) {
  StartServer();
  HttpResult r = Get("/api-doc/openapi.json");
  ASSERT_EQ(r.status, 200);
  json doc = r.Json();
  EXPECT_EQ(doc["openapi"], "3.0.3");
  for (const char* path :
       {"/generate", "/generate_stream", "/", "/v1/chat/completions", "/v1/completions",
        "/tokenize", "/health", "/info", "/metrics", "/v1/models"}) {
    EXPECT_TRUE(doc["paths"].contains(path)) << path;
  }
  HttpResult docs = Get("/docs");
  EXPECT_EQ(docs.status, 200);
  EXPECT_NE(docs.body.find("/api-doc/openapi.json"), std::string::npos);
}

TEST_F(OpsRoutesTest, UnknownPathsAndMethods) {
  StartServer();
  HttpResult missing = Get("/nope");
  EXPECT_EQ(missing.status, 404);
  EXPECT_EQ(missing.Json()["error_type"], "not_found");
  HttpResult wrong = Get("/generate");
  EXPECT_EQ(wrong.status, 405);
  EXPECT_TRUE(wrong.HasHeader("Allow: POST"));
  EXPECT_EQ(Post("/health", "{}").status, 405);
}

TEST_F(OpsRoutesTest, ApiKeyProtectsEverythingButHealth) {
  config_.api_key = "s3cret";
  StartServer();
  EXPECT_EQ(Get("/health").status, 200);
  EXPECT_EQ(Get("/ping").status, 200);
  HttpResult denied = Post("/generate", R"({"inputs": "x"})");
  EXPECT_EQ(denied.status, 401);
  EXPECT_TRUE(denied.HasHeader("WWW-Authenticate: Bearer"));
  EXPECT_EQ(Get("/metrics").status, 401);
  EXPECT_EQ(Get("/info").status, 401);
  HttpResult oai = Post("/v1/chat/completions", R"({"messages": []})");
  EXPECT_EQ(oai.status, 401);
  EXPECT_EQ(oai.Json()["error"]["type"], "authentication_error");
  EXPECT_EQ(Post("/generate", R"({"inputs": "x", "parameters": {"max_new_tokens": 1}})",
                 "Authorization: Bearer wrong\r\n")
                .status,
            401);
  EXPECT_EQ(Post("/generate", R"({"inputs": "x", "parameters": {"max_new_tokens": 1}})",
                 "Authorization: bearer s3cret\r\n")
                .status,
            200);
  EXPECT_EQ(Get("/info", "Authorization: Bearer s3cret\r\n").status, 200);
}

TEST(ConstantTimeEquals, Compares) {
  EXPECT_TRUE(ConstantTimeEquals("abc", "abc"));
  EXPECT_FALSE(ConstantTimeEquals("abc", "abd"));
  EXPECT_FALSE(ConstantTimeEquals("abc", "ab"));
  EXPECT_FALSE(ConstantTimeEquals("", "a"));
}

TEST_F(OpsRoutesTest, NoCorsHeadersUnlessConfigured) {
  StartServer();
  HttpResult r = Get("/health", "Origin: http://example.com\r\n");
  EXPECT_FALSE(r.HasHeader("Access-Control-Allow-Origin"));
}

TEST_F(OpsRoutesTest, CorsForConfiguredOrigins) {
  config_.cors_allow_origins = {"http://ok.example"};
  StartServer();
  EXPECT_TRUE(Get("/health", "Origin: http://ok.example\r\n")
                  .HasHeader("Access-Control-Allow-Origin: http://ok.example"));
  EXPECT_FALSE(
      Get("/health", "Origin: http://evil.example\r\n").HasHeader("Access-Control-Allow-Origin"));
  RawClient c(port());
  c.Send(
      "OPTIONS /generate HTTP/1.1\r\nHost: x\r\nOrigin: http://ok.example\r\n"
      "Access-Control-Request-Method: POST\r\n\r\n");
  HttpResult pre = ReadResponse(c);
  EXPECT_EQ(pre.status, 204);
  EXPECT_TRUE(pre.HasHeader("Access-Control-Allow-Methods: GET, POST, OPTIONS"));
  EXPECT_TRUE(pre.HasHeader("Access-Control-Allow-Headers: authorization, content-type"));
}

TEST_F(OpsRoutesTest, HttpLayerErrorsUseTheTgiShape) {
  config_.http.max_body_bytes = 100;
  StartServer();
  HttpResult r = Post("/generate", std::string(101, ' '));
  EXPECT_EQ(r.status, 413);
  EXPECT_EQ(r.Json()["error_type"], "payload_too_large");
}

}  // namespace
}  // namespace kiln::testing
