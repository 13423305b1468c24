// OpenAI response bodies and stream chunks for /v1/chat/completions and /v1/completions.
// Finish reasons are OpenAI's ("stop", "length"); a stop sequence also reports "stop".
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "api/generate_response.h"

namespace kiln::api {

// Fields every response and chunk of one request repeats.
struct OpenAiHeader {
  std::string id;  // "chatcmpl-..." or "cmpl-..."
  int64_t created = 0;
  std::string model;
};

struct Usage {
  int64_t prompt_tokens = 0;
  int64_t completion_tokens = 0;
};

// How a stream chunk carries "usage": absent, null (include_usage asked, not the last chunk)
// or the counts so far (continuous_usage_stats).
struct ChunkUsage {
  bool field = false;
  std::optional<Usage> value;
};

struct TokenLogprob {
  TokenInfo token;
  std::vector<TokenInfo> top;
};

// "stop" for eos_token and stop_sequence, "length" for length; others pass through.
std::string OpenAiFinishReason(std::string_view tgi_reason);

nlohmann::json UsageJson(const Usage& u);

// Chat: {"content": [{"token","logprob","bytes","top_logprobs":[...]}]}.
nlohmann::json ChatLogprobsJson(const std::vector<TokenLogprob>& tokens);

struct ChatChoice {
  int32_t index = 0;
  std::string content;
  std::string finish_reason;  // OpenAI's
  nlohmann::json logprobs;    // null or ChatLogprobsJson
};

std::string ChatCompletionJson(const OpenAiHeader& h, const std::vector<ChatChoice>& choices,
                               const Usage& usage, const std::string& fingerprint);

// One chat.completion.chunk with one choice. `first`: the choice's first chunk (carries the
// role). `finish_reason` empty: null. `logprobs` may be null JSON.
std::string ChatChunkJson(const OpenAiHeader& h, int32_t index, bool first,
                          std::string_view content, const nlohmann::json& logprobs,
                          std::string_view finish_reason, const ChunkUsage& usage,
                          const std::string& fingerprint);

// The include_usage chunk: "choices": [] and the totals.
std::string UsageChunkJson(const OpenAiHeader& h, const char* object, const Usage& usage,
                           const std::string& fingerprint);

// Completions: {"tokens","token_logprobs","top_logprobs","text_offset"}; offsets start at
// `text_offset` (the length of whatever precedes the first token's text).
nlohmann::json CompletionLogprobsJson(const std::vector<TokenLogprob>& tokens, int64_t text_offset);

struct CompletionChoice {
  int32_t index = 0;
  std::string text;
  std::string finish_reason;
  nlohmann::json logprobs;  // null or CompletionLogprobsJson
};

std::string CompletionJson(const OpenAiHeader& h, const std::vector<CompletionChoice>& choices,
                           const Usage& usage, const std::string& fingerprint);

std::string CompletionChunkJson(const OpenAiHeader& h, int32_t index, std::string_view text,
                                const nlohmann::json& logprobs, std::string_view finish_reason,
                                const ChunkUsage& usage, const std::string& fingerprint);

// "chatcmpl-" / "cmpl-" followed by 24 random alphanumerics.
std::string NewCompletionId(std::string_view prefix);

}  // namespace kiln::api
