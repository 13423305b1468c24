// OpenAI /v1/chat/completions request. Messages are normalized for the chat template: text
// content parts are joined into one string, null content becomes "", images are refused.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "api/generation_options.h"
#include "api/limits.h"
#include "api/openai_common.h"

namespace kiln::api {

struct ChatRequest {
  nlohmann::json messages;  // [{"role": string, "content": string, ...other keys kept}]
  std::string model;        // as sent; may be empty
  GenerationOptions options;
  StreamOptions stream;
  bool add_generation_prompt = true;  // vLLM extension
};

// Throws ApiError (422) on the first problem.
ChatRequest ParseChatRequest(const nlohmann::json& body, const ValidationLimits& limits);

}  // namespace kiln::api
