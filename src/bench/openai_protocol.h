// The OpenAI wire format as kiln bench uses it: streaming request bodies for /v1/completions and
// /v1/chat/completions, and what one SSE event of the response says.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "bench/dataset.h"

namespace kiln::bench {

enum class RequestType { kTextCompletions, kChatCompletions };

// "text_completions" / "chat_completions" (GuideLLM's names); throws kiln::Error otherwise.
RequestType ParseRequestType(const std::string& name);
const char* RequestTypeName(RequestType type);

// Path below the target URL: "/v1/completions"; without the "/v1" when the target already ends
// in "/v1".
std::string EndpointPath(RequestType type, const std::string& target_path);

// Streaming body with usage reporting. A fixed output length is forced the way GuideLLM does
// (max_tokens, "stop": null, "ignore_eos": true) plus vLLM's min_tokens.
std::string BuildRequestBody(RequestType type, const std::string& model, const DataItem& item);

struct StreamEventInfo {
  bool done = false;         // the "[DONE]" sentinel
  bool has_content = false;  // text, delta.content or reasoning content that is not empty
  std::optional<int64_t> prompt_tokens;      // from "usage"
  std::optional<int64_t> completion_tokens;  // from "usage"
  std::optional<std::string> error;          // in-stream {"error": ...} or undecodable data
};

// Reads the data of one SSE event. Never throws: bad JSON comes back as `error`.
StreamEventInfo ParseStreamEvent(std::string_view data);

}  // namespace kiln::bench
