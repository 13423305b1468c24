// OpenAI /v1/completions request: one or more prompts (text, or token ids as vLLM accepts),
// each answered with `n` choices indexed prompt * n + choice.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "api/generation_options.h"
#include "api/limits.h"
#include "api/openai_common.h"

namespace kiln::api {

struct CompletionPrompt {
  std::string text;                // when given as text
  std::vector<int32_t> token_ids;  // when given as token ids (then `text` is empty)
  bool is_tokens = false;
};

struct CompletionRequest {
  std::vector<CompletionPrompt> prompts;  // 1..max_client_batch_size
  std::string model;
  GenerationOptions options;
  StreamOptions stream;
  bool echo = false;      // prepend the prompt to each choice's text
  int32_t logprobs = -1;  // -1: none; else top alternatives per token (0..max_top_n)
};

// Throws ApiError (422) on the first problem. max_tokens defaults to 16, as OpenAI's.
CompletionRequest ParseCompletionRequest(const nlohmann::json& body,
                                         const ValidationLimits& limits);

}  // namespace kiln::api
