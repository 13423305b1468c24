#include <gtest/gtest.h>

#include <string>

#include "server/server_fixture.h"

namespace kiln::testing {
namespace {

using nlohmann::json;

class OpenAiRoutesTest : public ServerTest {};

constexpr const char* kChat = R"({"model": "whatever", "messages": [
    {"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}],
    "max_tokens": 4)";

TEST_F(OpenAiRoutesTest, ChatCompletion) {
  StartServer();
  HttpResult r = Post("/v1/chat/completions", std::string(kChat) + "}");
  ASSERT_EQ(r.status, 200) << r.body;
  json j = r.Json();
  EXPECT_EQ(j["object"], "chat.completion");
  EXPECT_EQ(j["id"].get<std::string>().rfind("chatcmpl-", 0), 0u);
  EXPECT_GT(j["id"].get<std::string>().size(), 9u);
  EXPECT_EQ(j["model"], "test-model");
  EXPECT_EQ(j["choices"][0]["message"], json({{"role", "assistant"}, {"content", "Hell"}}));
  EXPECT_EQ(j["choices"][0]["finish_reason"], "length");
  EXPECT_TRUE(j["choices"][0]["logprobs"].is_null());
  const int64_t prompt = j["usage"]["prompt_tokens"];
  EXPECT_EQ(j["usage"]["completion_tokens"], 4);
  EXPECT_EQ(j["usage"]["total_tokens"], prompt + 4);
  // The ChatML fallback template was applied.
  GenerationRequest sent = engine_.submitted().at(0);
  std::string text = tokenizer_.Decode(sent.prompt, true);
  EXPECT_EQ(text,
            "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n"
            "<|im_start|>assistant\n");
  EXPECT_TRUE(sent.sampling.do_sample);  // OpenAI default: temperature 1
}

TEST_F(OpenAiRoutesTest, ChatUsesTheConfiguredTemplate) {
  chat_template_ = [](const json& messages, bool) {
    return "T:" + messages.back()["content"].get<std::string>();
  };
  StartServer();
  ASSERT_EQ(Post("/v1/chat/completions", std::string(kChat) + "}").status, 200);
  EXPECT_EQ(tokenizer_.Decode(engine_.submitted().at(0).prompt, true), "T:Hi");
}

TEST_F(OpenAiRoutesTest, TemplateErrorsAre422) {
  chat_template_ = [](const json&, bool) -> std::string {
    throw std::runtime_error("no such filter");
  };
  StartServer();
  HttpResult r = Post("/v1/chat/completions", std::string(kChat) + "}");
  EXPECT_EQ(r.status, 422);
  EXPECT_EQ(r.Json()["error"]["message"], "Template error: no such filter");
  EXPECT_EQ(r.Json()["error"]["code"], "template_error");
}

TEST_F(OpenAiRoutesTest, ChatStreamWithUsage) {
  StartServer();
  HttpResult r =
      Post("/v1/chat/completions",
           std::string(kChat) + R"(, "stream": true, "stream_options": {"include_usage": true}})");
  ASSERT_EQ(r.status, 200);
  std::vector<std::string> frames = SseData(r.body);
  ASSERT_EQ(frames.size(), 6u) << r.body;  // 4 tokens, usage, [DONE]
  EXPECT_EQ(frames.back(), "[DONE]");
  EXPECT_NE(r.body.find("data: [DONE]\n\n"), std::string::npos);
  json first = json::parse(frames[0]);
  EXPECT_EQ(first["object"], "chat.completion.chunk");
  EXPECT_EQ(first["choices"][0]["delta"], json({{"role", "assistant"}, {"content", "H"}}));
  EXPECT_TRUE(first["usage"].is_null());
  json second = json::parse(frames[1]);
  EXPECT_EQ(second["choices"][0]["delta"], json({{"content", "e"}}));
  EXPECT_EQ(second["id"], first["id"]);
  json last_token = json::parse(frames[3]);
  EXPECT_EQ(last_token["choices"][0]["finish_reason"], "length");
  json usage = json::parse(frames[4]);
  EXPECT_EQ(usage["choices"], json::array());
  EXPECT_EQ(usage["usage"]["completion_tokens"], 4);
}

TEST_F(OpenAiRoutesTest, ChatStreamWithoutUsageHasNoUsageField) {
  StartServer();
  HttpResult r = Post("/v1/chat/completions", std::string(kChat) + R"(, "stream": true})");
  std::vector<std::string> frames = SseData(r.body);
  ASSERT_EQ(frames.size(), 5u);
  EXPECT_FALSE(json::parse(frames[0]).contains("usage"));
}

TEST_F(OpenAiRoutesTest, ContinuousUsageStats) {
  StartServer();
  HttpResult r =
      Post("/v1/chat/completions", std::string(kChat) + R"(, "stream": true, "stream_options":
                          {"include_usage": true, "continuous_usage_stats": true}})");
  std::vector<std::string> frames = SseData(r.body);
  ASSERT_GE(frames.size(), 2u);
  EXPECT_EQ(json::parse(frames[1])["usage"]["completion_tokens"], 2);
}

TEST_F(OpenAiRoutesTest, EosAndStopMapToStop) {
  StartServer();
  HttpResult r = Post("/v1/chat/completions",
                      R"({"messages": [{"role": "user", "content": "EOS"}], "temperature": 0})");
  ASSERT_EQ(r.status, 200);
  EXPECT_EQ(r.Json()["choices"][0]["finish_reason"], "stop");
  EXPECT_EQ(r.Json()["choices"][0]["message"]["content"], "He");
  EXPECT_FALSE(engine_.submitted().at(0).sampling.do_sample);  // temperature 0: greedy
}

TEST_F(OpenAiRoutesTest, NChoicesAndLogprobs) {
  StartServer();
  HttpResult r = Post("/v1/chat/completions", std::string(kChat) +
                                                  R"(, "n": 2, "logprobs": true,
                                                      "top_logprobs": 2})");
  ASSERT_EQ(r.status, 200) << r.body;
  json j = r.Json();
  ASSERT_EQ(j["choices"].size(), 2u);
  EXPECT_EQ(j["choices"][1]["index"], 1);
  json lp = j["choices"][0]["logprobs"]["content"];
  ASSERT_EQ(lp.size(), 4u);
  EXPECT_EQ(lp[0]["token"], "H");
  EXPECT_EQ(lp[0]["top_logprobs"].size(), 2u);
  EXPECT_EQ(j["usage"]["completion_tokens"], 8);
}

TEST_F(OpenAiRoutesTest, BenchmarkStyleRequest) {
  // What GuideLLM sends for a fixed output length.
  StartServer();
  HttpResult r = Post("/v1/chat/completions", R"({"model": "m", "messages": [{"role": "user",
      "content": "go"}], "max_tokens": 7, "stop": null, "ignore_eos": true, "stream": true,
      "stream_options": {"include_usage": true, "continuous_usage_stats": true}})");
  ASSERT_EQ(r.status, 200);
  GenerationRequest sent = engine_.submitted().at(0);
  EXPECT_TRUE(sent.stop.ignore_eos);
  EXPECT_EQ(sent.stop.max_new_tokens, 7);
  EXPECT_EQ(SseData(r.body).back(), "[DONE]");
}

TEST_F(OpenAiRoutesTest, ErrorsUseTheOpenAiShape) {
  StartServer();
  HttpResult r = Post("/v1/chat/completions", std::string(kChat) + R"(, "top_p": 2})");
  EXPECT_EQ(r.status, 422);
  json e = r.Json()["error"];
  EXPECT_EQ(e["message"], "Input validation error: `top_p` must be > 0.0 and <= 1.0");
  EXPECT_EQ(e["type"], "invalid_request_error");
  EXPECT_EQ(e["param"], "top_p");
  EXPECT_EQ(e["code"], "validation");
  HttpResult stream =
      Post("/v1/chat/completions", std::string(kChat) + R"(, "stream": true, "n": 0})");
  EXPECT_EQ(stream.status, 422);
  EXPECT_TRUE(stream.Json().contains("error"));
  EXPECT_EQ(
      Post("/v1/chat/completions", std::string(kChat) + R"(, "stop_token_ids": [999]})").status,
      422);
}

TEST_F(OpenAiRoutesTest, Completions) {
  StartServer();
  HttpResult r = Post("/v1/completions", R"({"prompt": ["a", "b"], "max_tokens": 3, "n": 2,
                                             "echo": true, "logprobs": 1})");
  ASSERT_EQ(r.status, 200) << r.body;
  json j = r.Json();
  EXPECT_EQ(j["object"], "text_completion");
  EXPECT_EQ(j["id"].get<std::string>().rfind("cmpl-", 0), 0u);
  ASSERT_EQ(j["choices"].size(), 4u);
  EXPECT_EQ(j["choices"][0]["text"], "aHel");
  EXPECT_EQ(j["choices"][2]["text"], "bHel");
  EXPECT_EQ(j["choices"][3]["index"], 3);
  EXPECT_EQ(j["choices"][0]["logprobs"]["text_offset"], json({1, 2, 3}));
  EXPECT_EQ(j["usage"]["prompt_tokens"], 4);
  EXPECT_EQ(j["usage"]["completion_tokens"], 12);
}

TEST_F(OpenAiRoutesTest, CompletionsDefaultTo16TokensAndAcceptTokenIds) {
  StartServer();
  HttpResult r = Post("/v1/completions", R"({"prompt": [70, 71]})");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(engine_.submitted().at(0).prompt, (std::vector<int32_t>{70, 71}));
  EXPECT_EQ(engine_.submitted().at(0).stop.max_new_tokens, 16);
  EXPECT_EQ(Post("/v1/completions", R"({"prompt": [70, 9999]})").status, 422);
}

TEST_F(OpenAiRoutesTest, CompletionsStream) {
  StartServer();
  HttpResult r = Post("/v1/completions", R"({"prompt": "a", "max_tokens": 2, "stream": true,
                                             "stream_options": {"include_usage": true}})");
  std::vector<std::string> frames = SseData(r.body);
  ASSERT_EQ(frames.size(), 4u) << r.body;
  EXPECT_EQ(json::parse(frames[0])["choices"][0]["text"], "H");
  EXPECT_EQ(json::parse(frames[0])["object"], "text_completion");
  EXPECT_EQ(json::parse(frames[2])["usage"]["total_tokens"], 4);
  EXPECT_EQ(frames[3], "[DONE]");
}

TEST_F(OpenAiRoutesTest, Models) {
  StartServer();
  HttpResult r = Get("/v1/models");
  ASSERT_EQ(r.status, 200);
  json j = r.Json();
  EXPECT_EQ(j["object"], "list");
  EXPECT_EQ(j["data"][0]["id"], "test-model");
  EXPECT_EQ(j["data"][0]["object"], "model");
}

}  // namespace
}  // namespace kiln::testing
