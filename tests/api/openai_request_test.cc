#include <gtest/gtest.h>

#include <string>

#include "api/chat_request.h"
#include "api/completion_request.h"
#include "api_test_util.h"

namespace kiln::api {
namespace {

ValidationLimits Limits() { return ValidationLimits{}; }  // 2, 4, 5, ..., client batch 4, n 16

ChatRequest Chat(const std::string& extra) {
  return ParseChatRequest(
      J(("{\"messages\": [{\"role\": \"user\", \"content\": \"Hi\"}]" + extra + "}").c_str()),
      Limits());
}

std::string ChatFails(const std::string& extra, int status = 422) {
  ApiError e = ExpectApiError([&] { Chat(extra); });
  EXPECT_EQ(e.status(), status) << extra;
  return e.message();
}

TEST(ChatRequest, Defaults) {
  ChatRequest r = Chat("");
  ASSERT_EQ(r.messages.size(), 1u);
  EXPECT_EQ(r.messages[0]["content"], "Hi");
  EXPECT_TRUE(r.options.do_sample);
  EXPECT_FALSE(r.options.max_new_tokens.has_value());
  EXPECT_FALSE(r.stream.stream);
  EXPECT_EQ(r.options.n, 1);
}

TEST(ChatRequest, TemperatureZeroIsGreedyAndTopPOneIsOff) {
  ChatRequest r = Chat(R"(, "temperature": 0, "top_p": 1.0)");
  EXPECT_FALSE(r.options.do_sample);
  EXPECT_FLOAT_EQ(r.options.top_p, 1.0f);
  EXPECT_EQ(ChatFails(R"(, "temperature": -0.1)"),
            "Input validation error: `temperature` must be non-negative");
  EXPECT_EQ(ChatFails(R"(, "top_p": 1.01)"),
            "Input validation error: `top_p` must be > 0.0 and <= 1.0");
}

TEST(ChatRequest, ContentPartsAreJoinedAndImagesRefused) {
  ChatRequest r = ParseChatRequest(J(R"({"messages": [
      {"role": "system", "content": null},
      {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}
    ]})"),
                                   Limits());
  EXPECT_EQ(r.messages[0]["content"], "");
  EXPECT_EQ(r.messages[1]["content"], "ab");
}

TEST(ChatRequest, BadMessages) {
  for (const char* body :
       {R"({"messages": []})", R"({"messages": "hi"})", R"({})",
        R"({"messages": [{"content": "x"}]})", R"({"messages": [{"role": "user", "content": 5}]})",
        R"({"messages": [{"role": "user", "content": [{"type": "image_url",
                               "image_url": {"url": "http://x"}}]}]})"}) {
    ApiError e = ExpectApiError([&] { ParseChatRequest(J(body), Limits()); });
    EXPECT_EQ(e.status(), 422) << body;
  }
}

TEST(ChatRequest, MaxTokensAliases) {
  EXPECT_EQ(Chat(R"(, "max_tokens": 7)").options.max_new_tokens, 7);
  EXPECT_EQ(Chat(R"(, "max_completion_tokens": 9, "max_tokens": 7)").options.max_new_tokens, 9);
  EXPECT_EQ(ChatFails(R"(, "max_tokens": 0)"),
            "Input validation error: `max_tokens` must be strictly positive");
  EXPECT_NE(ChatFails(R"(, "max_tokens": -3)").find("expected u32"), std::string::npos);
}

TEST(ChatRequest, StopStringOrListAtLimit) {
  EXPECT_EQ(Chat(R"(, "stop": "x")").options.stop, std::vector<std::string>{"x"});
  EXPECT_EQ(Chat(R"(, "stop": ["a", "b", "c", "d"])").options.stop.size(), 4u);
  EXPECT_EQ(ChatFails(R"(, "stop": ["a", "b", "c", "d", "e"])"),
            "Input validation error: `stop` supports up to 4 stop sequences. Given: 5");
}

TEST(ChatRequest, NAtLimit) {
  EXPECT_EQ(Chat(R"(, "n": 16)").options.n, 16);
  EXPECT_EQ(ChatFails(R"(, "n": 17)"),
            "Input validation error: `n` must be > 0 and <= 16. Given: 17");
  EXPECT_EQ(ChatFails(R"(, "n": 0)"),
            "Input validation error: `n` must be > 0 and <= 16. Given: 0");
}

TEST(ChatRequest, Logprobs) {
  ChatRequest r = Chat(R"(, "logprobs": true, "top_logprobs": 5)");
  EXPECT_TRUE(r.options.logprobs);
  EXPECT_EQ(r.options.top_n_tokens, 5);
  EXPECT_EQ(ChatFails(R"(, "logprobs": true, "top_logprobs": 6)"),
            "Input validation error: `top_logprobs` must be >= 0 and <= 5. Given: 6");
  EXPECT_EQ(ChatFails(R"(, "top_logprobs": 2)"),
            "Input validation error: when using `top_logprobs`, `logprobs` must be set to true.");
}

TEST(ChatRequest, PenaltiesAndBias) {
  ChatRequest r = Chat(R"(, "presence_penalty": 2, "frequency_penalty": -2,
                          "logit_bias": {"42": -100, "7": 5.5})");
  EXPECT_FLOAT_EQ(r.options.presence_penalty, 2.0f);
  EXPECT_FLOAT_EQ(r.options.frequency_penalty, -2.0f);
  ASSERT_EQ(r.options.logit_bias.size(), 2u);
  EXPECT_EQ(ChatFails(R"(, "presence_penalty": 2.5)"),
            "Input validation error: `presence_penalty` must be >= -2.0 and <= 2.0");
  EXPECT_EQ(ChatFails(R"(, "logit_bias": {"42": 101})"),
            "Input validation error: `logit_bias` values must be >= -100 and <= 100");
  EXPECT_NE(ChatFails(R"(, "logit_bias": {"abc": 1})").find("token ids"), std::string::npos);
  EXPECT_EQ(ChatFails(R"(, "logit_bias": [1])").find("Failed to deserialize"), 0u);
}

TEST(ChatRequest, VllmExtensions) {
  ChatRequest r = Chat(R"(, "ignore_eos": true, "min_tokens": 5, "max_tokens": 5, "top_k": -1,
                          "stop_token_ids": [1, 2], "seed": -7,
                          "stream": true, "stream_options": {"include_usage": true,
                                                             "continuous_usage_stats": true})");
  EXPECT_TRUE(r.options.ignore_eos);
  EXPECT_EQ(r.options.min_tokens, 5);
  EXPECT_EQ(r.options.top_k, 0);
  EXPECT_EQ(r.options.stop_token_ids, (std::vector<int32_t>{1, 2}));
  EXPECT_TRUE(r.options.seed.has_value());
  EXPECT_TRUE(r.stream.stream && r.stream.include_usage && r.stream.continuous_usage_stats);
  EXPECT_NE(ChatFails(R"(, "min_tokens": 6, "max_tokens": 5)").find("min_tokens"),
            std::string::npos);
}

TEST(ChatRequest, ResponseFormatAndTools) {
  EXPECT_NO_THROW(Chat(R"(, "response_format": {"type": "text"})"));
  EXPECT_EQ(ChatFails(R"(, "response_format": {"type": "json_object"})"),
            "Input validation error: `response_format` of type `json_object` is not supported: "
            "this server has no constrained decoding");
  EXPECT_EQ(ChatFails(R"(, "tools": [{"type": "function", "function": {"name": "f"}}])"),
            "Tool error: tools are not supported by this server");
  EXPECT_NO_THROW(Chat(R"(, "tools": [{"type": "function"}], "tool_choice": "none")"));
}

CompletionRequest Completion(const std::string& fields) {
  return ParseCompletionRequest(J(("{" + fields + "}").c_str()), Limits());
}

TEST(CompletionRequest, PromptForms) {
  EXPECT_EQ(Completion(R"("prompt": "a")").prompts.size(), 1u);
  EXPECT_EQ(Completion(R"("prompt": ["a", "b", "c", "d"])").prompts.size(), 4u);
  CompletionRequest ids = Completion(R"("prompt": [1, 2, 3])");
  ASSERT_EQ(ids.prompts.size(), 1u);
  EXPECT_TRUE(ids.prompts[0].is_tokens);
  EXPECT_EQ(ids.prompts[0].token_ids, (std::vector<int32_t>{1, 2, 3}));
  EXPECT_EQ(Completion(R"("prompt": [[1], [2, 3]])").prompts.size(), 2u);
  EXPECT_EQ(Completion(R"("prompt": "a")").options.max_new_tokens, 16);
}

TEST(CompletionRequest, Limits) {
  ApiError e = ExpectApiError([] { Completion(R"("prompt": ["a", "b", "c", "d", "e"])"); });
  EXPECT_EQ(e.status(), 422);
  EXPECT_EQ(e.message(), "Number of prompts exceeds the maximum allowed batch size of 4");
  EXPECT_EQ(ExpectApiError([] { Completion(R"("prompt": [])"); }).message(),
            "At least one prompt is required");
  EXPECT_EQ(ExpectApiError([] { Completion(R"("prompt": "a", "suffix": "b")"); }).message(),
            "Suffix is not supported and can be achieved by preprocessing the prompt.");
  EXPECT_EQ(ExpectApiError([] { Completion(R"("prompt": [1, -2])"); }).status(), 422);
  EXPECT_EQ(ExpectApiError([] { Completion(R"("prompt": [true])"); }).status(), 422);
  EXPECT_EQ(ExpectApiError([] { Completion(R"("nothing": 1)"); }).status(), 422);
}

TEST(CompletionRequest, Logprobs) {
  EXPECT_EQ(Completion(R"("prompt": "a", "logprobs": 5)").logprobs, 5);
  EXPECT_EQ(Completion(R"("prompt": "a", "logprobs": 0)").options.top_n_tokens, 0);
  EXPECT_TRUE(Completion(R"("prompt": "a", "logprobs": 0)").options.logprobs);
  EXPECT_EQ(ExpectApiError([] { Completion(R"("prompt": "a", "logprobs": 6)"); }).message(),
            "Input validation error: `logprobs` must be >= 0 and <= 5. Given: 6");
}

}  // namespace
}  // namespace kiln::api
