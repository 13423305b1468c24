#include <gtest/gtest.h>

#include <string>

#include "api/api_error.h"
#include "api/generate_response.h"
#include "api/openai_response.h"
#include "api/sse.h"

namespace kiln::api {
namespace {

using nlohmann::json;

TEST(ErrorBodies, TgiAndOpenAiShapes) {
  ApiError e = ValidationError("`top_k` must be strictly positive", "top_k");
  EXPECT_EQ(json::parse(TgiErrorJson(e)),
            json({{"error", "Input validation error: `top_k` must be strictly positive"},
                  {"error_type", "validation"}}));
  json oa = json::parse(OpenAiErrorJson(e));
  EXPECT_EQ(oa["error"]["message"], "Input validation error: `top_k` must be strictly positive");
  EXPECT_EQ(oa["error"]["type"], "invalid_request_error");
  EXPECT_EQ(oa["error"]["param"], "top_k");
  EXPECT_EQ(oa["error"]["code"], "validation");
  EXPECT_TRUE(json::parse(OpenAiErrorJson(OverloadedError()))["error"]["param"].is_null());
}

TEST(ErrorBodies, StatusesMatchTgi) {
  EXPECT_EQ(OverloadedError().status(), 429);
  EXPECT_EQ(OverloadedError().message(), "Model is overloaded");
  EXPECT_EQ(OverloadedError().type(), "overloaded");
  EXPECT_EQ(GenerationError("boom").status(), 424);
  EXPECT_EQ(GenerationError("boom").message(), "Request failed during generation: boom");
  EXPECT_EQ(IncompleteGenerationError().status(), 500);
  EXPECT_EQ(ValidationError("x").status(), 422);
}

TEST(Sse, Framing) {
  EXPECT_EQ(SseData("{\"a\":1}"), "data: {\"a\":1}\n\n");
  EXPECT_EQ(kSseDone, "data: [DONE]\n\n");
  EXPECT_EQ(kSseKeepAlive, ":\n\n");
}

TEST(GenerateResponse, PlainAndDetails) {
  SequenceResult s;
  s.generated_text = " world";
  s.finish_reason = "length";
  s.generated_tokens = 1;
  s.tokens = {{5, " world", -0.5f, false}};
  EXPECT_EQ(GenerateResponseJson(s, {}, false), json({{"generated_text", " world"}}));
  json d = GenerateResponseJson(s, {}, true);
  EXPECT_EQ(d["details"]["finish_reason"], "length");
  EXPECT_TRUE(d["details"]["seed"].is_null());
  EXPECT_EQ(d["details"]["prefill"], json::array());
  EXPECT_EQ(d["details"]["tokens"][0]["id"], 5);
  EXPECT_FALSE(d["details"].contains("top_tokens"));
  EXPECT_FALSE(d["details"].contains("best_of_sequences"));
  json with_others = GenerateResponseJson(s, {s}, true);
  EXPECT_EQ(with_others["details"]["best_of_sequences"][0]["generated_text"], " world");
}

TEST(GenerateResponse, InvalidUtf8AndInfiniteLogprobSerialize) {
  SequenceResult s;
  s.generated_text = "\xe2\x82";  // a character cut in half
  s.tokens = {{1, "\xff", -std::numeric_limits<float>::infinity(), false}};
  std::string out;
  ASSERT_NO_THROW(out = StreamTokenJson(1, s.tokens[0], {}, &s.generated_text, nullptr));
  json j = json::parse(out);
  EXPECT_EQ(j["token"]["text"], "\xef\xbf\xbd");
  EXPECT_TRUE(j["token"]["logprob"].is_number());
}

TEST(GenerateResponse, StreamFrames) {
  TokenInfo t{7, "Hi", -0.25f, false};
  json mid = json::parse(StreamTokenJson(1, t, {}, nullptr, nullptr));
  EXPECT_EQ(mid,
            json({{"index", 1},
                  {"token", {{"id", 7}, {"text", "Hi"}, {"logprob", -0.25}, {"special", false}}},
                  {"generated_text", nullptr},
                  {"details", nullptr}}));
  std::string text = "Hi";
  StreamDetails d{"eos_token", 3, 42u, 5};
  json last = json::parse(StreamTokenJson(3, t, {t}, &text, &d));
  EXPECT_EQ(last["generated_text"], "Hi");
  EXPECT_EQ(last["details"], json({{"finish_reason", "eos_token"},
                                   {"generated_tokens", 3},
                                   {"seed", 42},
                                   {"input_length", 5}}));
  EXPECT_EQ(last["top_tokens"].size(), 1u);
}

TEST(OpenAiResponse, ChatCompletion) {
  OpenAiHeader h{"chatcmpl-1", 123, "m"};
  json j = json::parse(ChatCompletionJson(h, {{0, "hi", "stop", nullptr}}, {3, 2}, "fp"));
  EXPECT_EQ(j["object"], "chat.completion");
  EXPECT_EQ(j["id"], "chatcmpl-1");
  EXPECT_EQ(j["choices"][0]["message"], json({{"role", "assistant"}, {"content", "hi"}}));
  EXPECT_EQ(j["choices"][0]["finish_reason"], "stop");
  EXPECT_EQ(j["usage"],
            json({{"prompt_tokens", 3}, {"completion_tokens", 2}, {"total_tokens", 5}}));
}

TEST(OpenAiResponse, ChatChunks) {
  OpenAiHeader h{"chatcmpl-1", 123, "m"};
  json first = json::parse(ChatChunkJson(h, 0, true, "He", nullptr, "", {}, "fp"));
  EXPECT_EQ(first["object"], "chat.completion.chunk");
  EXPECT_EQ(first["choices"][0]["delta"], json({{"role", "assistant"}, {"content", "He"}}));
  EXPECT_TRUE(first["choices"][0]["finish_reason"].is_null());
  EXPECT_FALSE(first.contains("usage"));
  json last = json::parse(ChatChunkJson(h, 0, false, "", nullptr, "length", {true, {}}, "fp"));
  EXPECT_EQ(last["choices"][0]["delta"], json::object());
  EXPECT_EQ(last["choices"][0]["finish_reason"], "length");
  EXPECT_TRUE(last["usage"].is_null());
  json usage = json::parse(UsageChunkJson(h, "chat.completion.chunk", {4, 2}, "fp"));
  EXPECT_EQ(usage["choices"], json::array());
  EXPECT_EQ(usage["usage"]["total_tokens"], 6);
}

TEST(OpenAiResponse, FinishReasons) {
  EXPECT_EQ(OpenAiFinishReason("eos_token"), "stop");
  EXPECT_EQ(OpenAiFinishReason("stop_sequence"), "stop");
  EXPECT_EQ(OpenAiFinishReason("length"), "length");
}

TEST(OpenAiResponse, CompletionWithLogprobs) {
  OpenAiHeader h{"cmpl-1", 1, "m"};
  // Built step by step: nested braced lists trip GCC 12's -Wmaybe-uninitialized.
  TokenInfo a{1, "a", -1.0f, false}, bc{2, "bc", -2.0f, false};
  std::vector<TokenLogprob> lp(2);
  lp[0].token = a;
  lp[0].top.push_back(a);
  lp[1].token = bc;
  json j = json::parse(
      CompletionJson(h, {{0, "abc", "length", CompletionLogprobsJson(lp, 10)}}, {1, 2}, "fp"));
  EXPECT_EQ(j["object"], "text_completion");
  EXPECT_EQ(j["choices"][0]["logprobs"]["text_offset"], json({10, 11}));
  EXPECT_EQ(j["choices"][0]["logprobs"]["top_logprobs"][0]["a"], -1.0);
  json chat = ChatLogprobsJson(lp);
  EXPECT_EQ(chat["content"][1]["bytes"], json({98, 99}));
}

TEST(OpenAiResponse, Ids) {
  std::string a = NewCompletionId("chatcmpl-"), b = NewCompletionId("chatcmpl-");
  EXPECT_EQ(a.rfind("chatcmpl-", 0), 0u);
  EXPECT_EQ(a.size(), 9u + 24u);
  EXPECT_NE(a, b);
}

}  // namespace
}  // namespace kiln::api
