// Server-sent event framing. Frames are `data: <payload>\n\n` with a space after the colon:
// every SSE parser accepts it, and some clients (older GuideLLM, huggingface_hub) only accept
// `data: [DONE]` with the space. Keep-alive comments are `:\n\n`, as axum sends.
#pragma once

#include <string>
#include <string_view>

namespace kiln::api {

std::string SseData(std::string_view payload);
inline constexpr std::string_view kSseKeepAlive = ":\n\n";
inline constexpr std::string_view kSseDone = "data: [DONE]\n\n";

}  // namespace kiln::api
