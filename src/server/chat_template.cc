#include "server/chat_template.h"

namespace kiln {

std::string RenderChatMl(const nlohmann::json& messages, bool add_generation_prompt) {
  std::string out;
  for (const auto& m : messages) {
    out += "<|im_start|>";
    out += m.value("role", "user");
    out += "\n";
    const auto& content = m.contains("content") ? m["content"] : nlohmann::json();
    if (content.is_string()) out += content.get<std::string>();
    out += "<|im_end|>\n";
  }
  if (add_generation_prompt) out += "<|im_start|>assistant\n";
  return out;
}

}  // namespace kiln
