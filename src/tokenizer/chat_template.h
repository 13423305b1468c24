// Chat templates: the Jinja templates of tokenizer_config.json (and GGUF tokenizer.chat_template),
// rendered as transformers' apply_chat_template renders them (jinja2 sandbox with trim_blocks and
// lstrip_blocks, loop controls, tojson without HTML escaping, raise_exception, strftime_now).
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "tokenizer/jinja/error.h"
#include "tokenizer/jinja/evaluator.h"

namespace kiln {

namespace jinja {
struct Template;
}

using ChatTemplateError = jinja::TemplateError;  // a kiln::Error; raised() = raise_exception
using ChatTemplateLimits = jinja::RenderLimits;

class ChatTemplate {
 public:
  // Throws ChatTemplateError naming the line of a syntax error.
  static ChatTemplate Parse(std::string_view source);

  // Renders with the context's keys as the template's variables. Python dicts keep insertion
  // order and templates serialize tools with |tojson, so pass ordered_json to get
  // transformers' exact bytes; nlohmann::json sorts object keys. Throws ChatTemplateError.
  std::string Render(const nlohmann::json& context) const;
  std::string Render(const nlohmann::ordered_json& context) const;

  // apply_chat_template(messages, tools=tools, add_generation_prompt=..., **extra) with the
  // tokenizer's bos_token / eos_token: tools and documents are none unless given.
  template <typename Json>
  std::string RenderChat(const Json& messages, bool add_generation_prompt,
                         std::string_view bos_token, std::string_view eos_token,
                         const Json& tools = nullptr, const Json& extra = Json::object()) const {
    Json context = Json::object();
    context["messages"] = messages;
    context["tools"] = tools;
    context["documents"] = nullptr;
    context["add_generation_prompt"] = add_generation_prompt;
    context["bos_token"] = std::string(bos_token);
    context["eos_token"] = std::string(eos_token);
    if (extra.is_object()) {
      for (auto it = extra.begin(); it != extra.end(); ++it) context[it.key()] = it.value();
    }
    return Render(context);
  }

  void set_limits(const ChatTemplateLimits& limits) { limits_ = limits; }

 private:
  std::shared_ptr<const jinja::Template> template_;  // immutable: Render is thread-safe
  ChatTemplateLimits limits_;
};

}  // namespace kiln
