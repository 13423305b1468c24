#include <gtest/gtest.h>

#include <string>

#include "server/server_fixture.h"

namespace kiln::testing {
namespace {

using nlohmann::json;

class TgiRoutesTest : public ServerTest {};

TEST_F(TgiRoutesTest, GenerateReturnsText) {
  StartServer();
  HttpResult r = Post("/generate", R"({"inputs": "Hi", "parameters": {"max_new_tokens": 5}})");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.Json(), json({{"generated_text", "Hello"}}));
  EXPECT_TRUE(r.HasHeader("x-generated-tokens: 5"));
  EXPECT_TRUE(r.HasHeader("x-prompt-tokens: 3"));  // BOS + "Hi"
  EXPECT_TRUE(r.HasHeader("x-compute-type: cpu"));
  // The engine got TGI's semantics.
  GenerationRequest sent = engine_.submitted().at(0);
  EXPECT_EQ(sent.prompt, (std::vector<int32_t>{1, 'H' + 3, 'i' + 3}));
  EXPECT_EQ(sent.stop.max_new_tokens, 5);
  EXPECT_FALSE(sent.sampling.do_sample);
}

TEST_F(TgiRoutesTest, GenerateWithDetails) {
  StartServer();
  HttpResult r = Post("/generate", R"({"inputs": "EOS", "parameters": {"max_new_tokens": 9,
      "details": true, "top_n_tokens": 2, "return_full_text": true}})");
  ASSERT_EQ(r.status, 200) << r.body;
  json j = r.Json();
  EXPECT_EQ(j["generated_text"], "EOSHe");
  EXPECT_EQ(j["details"]["finish_reason"], "eos_token");
  EXPECT_EQ(j["details"]["generated_tokens"], 3);
  EXPECT_TRUE(j["details"]["seed"].is_null());  // greedy
  EXPECT_EQ(j["details"]["prefill"], json::array());
  ASSERT_EQ(j["details"]["tokens"].size(), 3u);
  EXPECT_EQ(j["details"]["tokens"][0],
            json({{"id", 'H' + 3}, {"text", "H"}, {"logprob", -0.5}, {"special", false}}));
  EXPECT_EQ(j["details"]["tokens"][2]["special"], true);
  EXPECT_EQ(j["details"]["top_tokens"].size(), 3u);
  EXPECT_EQ(j["details"]["top_tokens"][0].size(), 2u);
}

TEST_F(TgiRoutesTest, BestOfPicksTheBestAndReportsTheOthers) {
  StartServer();
  HttpResult r = Post("/generate", R"({"inputs": "x", "parameters": {"max_new_tokens": 2,
      "best_of": 2, "do_sample": true, "details": true}})");
  ASSERT_EQ(r.status, 200) << r.body;
  json j = r.Json();
  EXPECT_EQ(j["details"]["best_of_sequences"].size(), 1u);
  EXPECT_EQ(j["details"]["seed"], 42);  // sampled: the seed is reported
  EXPECT_EQ(engine_.submitted().at(0).n, 2);
}

TEST_F(TgiRoutesTest, CompatRouteReturnsAnArrayOrAStream) {
  StartServer();
  HttpResult r = Post("/", R"({"inputs": "x", "parameters": {"max_new_tokens": 2}})");
  ASSERT_EQ(r.status, 200);
  EXPECT_EQ(r.Json(), json::array({{{"generated_text", "He"}}}));
  HttpResult s =
      Post("/", R"({"inputs": "x", "stream": true, "parameters": {"max_new_tokens": 2}})");
  ASSERT_EQ(s.status, 200);
  EXPECT_TRUE(s.HasHeader("Content-Type: text/event-stream"));
  EXPECT_EQ(SseData(s.body).size(), 2u);
}

TEST_F(TgiRoutesTest, StreamFramesMatchTgi) {
  StartServer();
  HttpResult r = Post("/generate_stream",
                      R"({"inputs": "Hi", "parameters": {"max_new_tokens": 3, "details": true}})");
  ASSERT_EQ(r.status, 200);
  EXPECT_TRUE(r.HasHeader("Cache-Control: no-cache"));
  EXPECT_TRUE(r.HasHeader("X-Accel-Buffering: no"));
  EXPECT_TRUE(r.HasHeader("Transfer-Encoding: chunked"));
  std::vector<std::string> frames = SseData(r.body);
  ASSERT_EQ(frames.size(), 3u) << r.body;
  EXPECT_EQ(r.body.rfind("data: {", 0), 0u);  // a space after "data:"
  json first = json::parse(frames[0]);
  EXPECT_EQ(
      first,
      json({{"index", 1},
            {"token", {{"id", 'H' + 3}, {"text", "H"}, {"logprob", -0.5}, {"special", false}}},
            {"generated_text", nullptr},
            {"details", nullptr}}));
  json last = json::parse(frames[2]);
  EXPECT_EQ(last["index"], 3);
  EXPECT_EQ(last["generated_text"], "Hel");
  EXPECT_EQ(last["details"], json({{"finish_reason", "length"},
                                   {"generated_tokens", 3},
                                   {"seed", nullptr},
                                   {"input_length", 3}}));
  EXPECT_EQ(r.body.find("[DONE]"), std::string::npos);  // TGI streams have none
}

TEST_F(TgiRoutesTest, ValidationErrorsKeepTheirStatusWhenStreaming) {
  StartServer();
  for (const char* path : {"/generate", "/generate_stream"}) {
    HttpResult r = Post(path, R"({"inputs": "x", "parameters": {"temperature": 0}})");
    EXPECT_EQ(r.status, 422) << path;
    EXPECT_FALSE(r.HasHeader("text/event-stream"));
    EXPECT_EQ(r.Json(), json({{"error",
                               "Input validation error: `temperature` must be strictly "
                               "positive"},
                              {"error_type", "validation"}}));
  }
  EXPECT_TRUE(engine_.submitted().empty());
}

TEST_F(TgiRoutesTest, TokenBudgetUsesTokenCounts) {
  config_.limits.max_input_tokens = 10;
  config_.limits.max_total_tokens = 20;
  StartServer();
  // BOS + 9 bytes = 10 input tokens: at the limit.
  EXPECT_EQ(
      Post("/generate", R"({"inputs": "123456789", "parameters": {"max_new_tokens": 10}})").status,
      200);
  HttpResult over =
      Post("/generate", R"({"inputs": "123456789", "parameters": {"max_new_tokens": 11}})");
  EXPECT_EQ(over.status, 422);
  EXPECT_EQ(over.Json()["error"],
            "Input validation error: `inputs` tokens + `max_new_tokens` must be <= 20. Given: 10 "
            "`inputs` tokens and 11 `max_new_tokens`");
  HttpResult long_input =
      Post("/generate", R"({"inputs": "1234567890", "parameters": {"max_new_tokens": 1}})");
  EXPECT_EQ(long_input.Json()["error"],
            "Input validation error: `inputs` must have less than 10 tokens. Given: 11");
  // Truncation keeps the last tokens.
  EXPECT_EQ(Post("/generate", R"({"inputs": "1234567890abc", "parameters": {"max_new_tokens": 1,
                                    "truncate": 4}})")
                .status,
            200);
  EXPECT_EQ(engine_.submitted().back().prompt,
            (std::vector<int32_t>{'0' + 3, 'a' + 3, 'b' + 3, 'c' + 3}));
}

TEST_F(TgiRoutesTest, UnsetMaxNewTokensTakesTheRestOfTheBudget) {
  config_.limits.max_input_tokens = 10;
  config_.limits.max_total_tokens = 20;
  StartServer();
  ASSERT_EQ(Post("/generate", R"({"inputs": "abc"})").status, 200);
  EXPECT_EQ(engine_.submitted().at(0).stop.max_new_tokens, 16);
  EXPECT_TRUE(engine_.submitted().at(0).sampling.do_sample);  // TGI's default without parameters
}

TEST_F(TgiRoutesTest, EngineErrorsAre424) {
  StartServer();
  HttpResult r = Post("/generate", R"({"inputs": "FAIL"})");
  EXPECT_EQ(r.status, 424);
  EXPECT_EQ(r.Json(), json({{"error", "Request failed during generation: the fake engine failed"},
                            {"error_type", "generation"}}));
  HttpResult s = Post("/generate_stream", R"({"inputs": "FAIL"})");
  EXPECT_EQ(s.status, 200);  // the failure came after the stream started
  std::vector<std::string> frames = SseData(s.body);
  ASSERT_EQ(frames.size(), 1u);
  EXPECT_EQ(json::parse(frames[0])["error_type"], "generation");
}

TEST_F(TgiRoutesTest, EngineRefusalIs429) {
  StartServer();
  engine_.set_refuse(true);
  HttpResult r = Post("/generate_stream", R"({"inputs": "x"})");
  EXPECT_EQ(r.status, 429);
  EXPECT_TRUE(r.HasHeader("Retry-After: 1"));
  EXPECT_EQ(r.Json(), json({{"error", "Model is overloaded"}, {"error_type", "overloaded"}}));
  EXPECT_EQ(server_->state().admission.in_flight(), 0);
}

TEST_F(TgiRoutesTest, BadBodies) {
  StartServer();
  HttpResult bad_json = Post("/generate", "{not json");
  EXPECT_EQ(bad_json.status, 400);
  EXPECT_EQ(bad_json.Json()["error_type"], "validation");
  EXPECT_EQ(Post("/generate", "[1,2]").status, 422);
  EXPECT_EQ(Post("/generate", R"({"inputs": ["a"]})").status, 422);
  EXPECT_EQ(Post("/generate", R"({"inputs": ""})").Json()["error"],
            "Input validation error: `inputs` cannot be empty");
}

TEST_F(TgiRoutesTest, Tokenize) {
  StartServer();
  HttpResult r = Post("/tokenize", R"({"inputs": "ab"})");
  ASSERT_EQ(r.status, 200) << r.body;
  json j = r.Json();
  ASSERT_EQ(j.size(), 3u);  // BOS, a, b
  EXPECT_EQ(j[0], json({{"id", 1}, {"text", ""}, {"start", 0}, {"stop", 0}}));
  EXPECT_EQ(j[2], json({{"id", 'b' + 3}, {"text", "b"}, {"start", 1}, {"stop", 2}}));
}

}  // namespace
}  // namespace kiln::testing
