#include "bench/openai_protocol.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "bench/stream_recorder.h"
#include "util/error.h"

namespace kiln::bench {
namespace {

using nlohmann::json;

TEST(OpenAiProtocol, EndpointPaths) {
  EXPECT_EQ(EndpointPath(RequestType::kTextCompletions, "/"), "/v1/completions");
  EXPECT_EQ(EndpointPath(RequestType::kChatCompletions, "/"), "/v1/chat/completions");
  EXPECT_EQ(EndpointPath(RequestType::kTextCompletions, "/v1"), "/v1/completions");
  EXPECT_EQ(EndpointPath(RequestType::kChatCompletions, "/proxy"), "/proxy/v1/chat/completions");
  EXPECT_EQ(ParseRequestType("chat_completions"), RequestType::kChatCompletions);
  EXPECT_THROW(ParseRequestType("embeddings"), Error);
}

TEST(OpenAiProtocol, TextCompletionBodyForcesTheOutputLength) {
  DataItem item{"hello world", "", 3, 16};
  json body = json::parse(BuildRequestBody(RequestType::kTextCompletions, "m", item));
  EXPECT_EQ(body["model"], "m");
  EXPECT_EQ(body["prompt"], "hello world");
  EXPECT_EQ(body["stream"], true);
  EXPECT_EQ(body["stream_options"]["include_usage"], true);
  EXPECT_EQ(body["max_tokens"], 16);
  EXPECT_EQ(body["min_tokens"], 16);
  EXPECT_EQ(body["ignore_eos"], true);
  EXPECT_TRUE(body.contains("stop") && body["stop"].is_null());
}

TEST(OpenAiProtocol, ChatBodyAndServerChosenLength) {
  DataItem item{"hi", "", -1, -1};
  json body = json::parse(BuildRequestBody(RequestType::kChatCompletions, "m", item));
  EXPECT_EQ(body["messages"], json::parse(R"([{"role":"user","content":"hi"}])"));
  EXPECT_FALSE(body.contains("max_tokens"));
  EXPECT_FALSE(body.contains("ignore_eos"));
  item.messages_json = R"([{"role":"system","content":"s"},{"role":"user","content":"u"}])";
  body = json::parse(BuildRequestBody(RequestType::kChatCompletions, "m", item));
  EXPECT_EQ(body["messages"].size(), 2u);
}

TEST(OpenAiProtocol, StreamEvents) {
  EXPECT_TRUE(ParseStreamEvent("[DONE]").done);
  EXPECT_TRUE(ParseStreamEvent(" [DONE]\r").done);
  EXPECT_TRUE(ParseStreamEvent(R"({"choices":[{"index":0,"text":"a"}]})").has_content);
  EXPECT_FALSE(ParseStreamEvent(R"({"choices":[{"index":0,"text":""}]})").has_content);
  EXPECT_TRUE(ParseStreamEvent(R"({"choices":[{"delta":{"content":"b"}}]})").has_content);
  EXPECT_TRUE(
      ParseStreamEvent(R"({"choices":[{"delta":{"reasoning_content":"think"}}]})").has_content);
  EXPECT_FALSE(ParseStreamEvent(R"({"choices":[{"delta":{"role":"assistant"}}]})").has_content);
  StreamEventInfo usage = ParseStreamEvent(
      R"({"choices":[],"usage":{"prompt_tokens":12,"completion_tokens":34,"total_tokens":46}})");
  EXPECT_FALSE(usage.has_content);
  EXPECT_EQ(usage.prompt_tokens, 12);
  EXPECT_EQ(usage.completion_tokens, 34);
  EXPECT_FALSE(ParseStreamEvent(R"({"choices":[],"usage":null})").completion_tokens);
  EXPECT_EQ(*ParseStreamEvent(R"({"error":{"message":"boom"}})").error, "boom");
  EXPECT_TRUE(ParseStreamEvent("{not json").error.has_value());
}

RequestRecord Started(double start) {
  RequestRecord r;
  r.request_start = start;
  r.expected_prompt_tokens = 7;
  return r;
}

TEST(StreamRecorder, TimesTokensAndUsage) {
  StreamRecorder rec(Started(1.0));
  rec.OnHeaders(200);
  rec.OnBody("data: {\"choices\":[{\"text\":\"a\"}]}\n\n", 1.25);
  rec.OnBody("data:{\"choices\":[{\"text\":\"b\"}]}\n\ndata: {\"choices\":[{\"te", 1.35);
  rec.OnBody("xt\":\"c\"}]}\n\n", 1.45);
  rec.OnBody(
      "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":9,\"completion_tokens\":3}}\n\n"
      "data: [DONE]\n\n",
      1.46);
  rec.OnEnd(http::StreamEnd::kComplete, "", 1.5);
  const RequestRecord& r = rec.record();
  EXPECT_EQ(r.status, RequestStatus::kSuccessful);
  EXPECT_DOUBLE_EQ(*r.first_token_time, 1.25);
  EXPECT_DOUBLE_EQ(*r.last_token_time, 1.45);
  EXPECT_NEAR(*r.TtftMs(), 250, 1e-9);
  EXPECT_NEAR(*r.ItlMs(), 100, 1e-9);
  EXPECT_EQ(r.output_tokens, 3);
  EXPECT_EQ(r.prompt_tokens, 9);
  EXPECT_EQ(r.content_events, 3);
  EXPECT_TRUE(r.usage_reported);
  EXPECT_DOUBLE_EQ(r.request_end, 1.5);
}

TEST(StreamRecorder, WithoutUsageCountsContentEvents) {
  StreamRecorder rec(Started(0));
  rec.OnHeaders(200);
  for (int i = 0; i < 5; ++i) rec.OnBody("data:{\"choices\":[{\"text\":\"x\"}]}\n\n", 0.1 * i);
  rec.OnBody("data:[DONE]\n\n", 0.5);
  rec.OnEnd(http::StreamEnd::kComplete, "", 0.5);
  EXPECT_EQ(rec.record().output_tokens, 5);
  EXPECT_FALSE(rec.record().usage_reported);
  EXPECT_EQ(rec.record().prompt_tokens, 7);  // the expected count stands in
}

TEST(StreamRecorder, CutOffIsIncomplete) {
  StreamRecorder rec(Started(0));
  rec.OnHeaders(200);
  rec.OnBody("data: {\"choices\":[{\"text\":\"x\"}]}\n\n", 0.2);
  rec.OnEnd(http::StreamEnd::kCancelled, "", 0.3);
  EXPECT_EQ(rec.record().status, RequestStatus::kIncomplete);
  EXPECT_EQ(rec.record().output_tokens, 1);
}

TEST(StreamRecorder, Errors) {
  StreamRecorder overloaded(Started(0));
  overloaded.OnHeaders(429);
  overloaded.OnBody(R"({"error":"queue full"})", 0.1);
  overloaded.OnEnd(http::StreamEnd::kComplete, "", 0.1);
  EXPECT_EQ(overloaded.record().status, RequestStatus::kErrored);
  EXPECT_EQ(overloaded.record().error, R"(HTTP 429: {"error":"queue full"})");
  EXPECT_EQ(overloaded.record().http_status, 429);

  StreamRecorder in_stream(Started(0));
  in_stream.OnHeaders(200);
  in_stream.OnBody("data: {\"error\":{\"message\":\"model crashed\"}}\n\n", 0.1);
  in_stream.OnEnd(http::StreamEnd::kComplete, "", 0.1);
  EXPECT_EQ(in_stream.record().status, RequestStatus::kErrored);
  EXPECT_EQ(in_stream.record().error, "model crashed");

  StreamRecorder transport(Started(0));
  transport.OnEnd(http::StreamEnd::kError, "connect: refused", 0.1);
  EXPECT_EQ(transport.record().status, RequestStatus::kErrored);
  EXPECT_EQ(transport.record().error, "connect: refused");

  StreamRecorder not_sse(Started(0));
  not_sse.OnHeaders(200);
  not_sse.OnBody(R"({"choices":[{"text":"all at once"}]})", 0.1);
  not_sse.OnEnd(http::StreamEnd::kComplete, "", 0.1);
  EXPECT_EQ(not_sse.record().status, RequestStatus::kErrored);
}

}  // namespace
}  // namespace kiln::bench
