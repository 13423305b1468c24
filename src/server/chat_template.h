// Chat messages -> prompt text. The Jinja renderer of the model's own template lives in
// tokenizer/ (being written); the server takes any function of this shape, and falls back to
// ChatML (<|im_start|>role\ncontent<|im_end|>), which SmolLM2, Qwen and many others use.
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <string>

namespace kiln {

// `messages`: [{"role", "content": string, ...}]. Throws on a template error (the server
// answers 422 "Template error: ...").
using ChatTemplateFn =
    std::function<std::string(const nlohmann::json& messages, bool add_generation_prompt)>;

std::string RenderChatMl(const nlohmann::json& messages, bool add_generation_prompt);

}  // namespace kiln
