#include "api/chat_request.h"

#include "api/api_error.h"
#include "api/json_fields.h"
#include "util/error.h"

namespace kiln::api {
namespace {

// Content as one string: a string, null (assistant turns with tool calls), or a list of parts
// of which only "text" parts are supported.
std::string ContentText(const nlohmann::json& content, const std::string& path) {
  if (content.is_null()) return "";
  if (content.is_string()) return content.get<std::string>();
  if (!content.is_array()) {
    throw WrongTypeError(path, StrCat("invalid type: ", DescribeJsonValue(content),
                                      ", expected a string or a sequence of content parts"));
  }
  std::string text;
  for (size_t i = 0; i < content.size(); ++i) {
    JsonFields part(content[i], StrCat(path, "[", i, "]"));
    std::string type = part.String("type").value_or("text");
    if (type != "text") {
      throw ValidationError(
          StrCat("content of type `", type, "` is not supported: this server reads text only"),
          "messages");
    }
    text += part.String("text").value_or("");
  }
  return text;
}

nlohmann::json NormalizeMessages(const JsonFields& top) {
  const nlohmann::json* messages = top.Get("messages");
  if (messages == nullptr) throw WrongTypeError("", "missing field `messages`");
  if (!messages->is_array()) {
    throw WrongTypeError("messages", StrCat("invalid type: ", DescribeJsonValue(*messages),
                                            ", expected a sequence"));
  }
  if (messages->empty()) throw ValidationError("`messages` cannot be empty", "messages");
  nlohmann::json out = nlohmann::json::array();
  for (size_t i = 0; i < messages->size(); ++i) {
    const std::string path = StrCat("messages[", i, "]");
    JsonFields m((*messages)[i], path);
    std::optional<std::string> role = m.String("role");
    if (!role) throw WrongTypeError(path, "missing field `role`");
    nlohmann::json normalized = (*messages)[i];
    auto content = normalized.find("content");
    normalized["content"] =
        content == normalized.end() ? std::string() : ContentText(*content, path + ".content");
    out.push_back(std::move(normalized));
  }
  return out;
}

void RejectTools(const JsonFields& top) {
  const nlohmann::json* tools = top.Get("tools");
  if (tools == nullptr || (tools->is_array() && tools->empty())) return;
  const nlohmann::json* choice = top.Get("tool_choice");
  if (choice != nullptr && choice->is_string() && choice->get<std::string>() == "none") return;
  throw ApiError(422, "tool_error", "Tool error: tools are not supported by this server", "tools");
}

}  // namespace

ChatRequest ParseChatRequest(const nlohmann::json& body, const ValidationLimits& limits) {
  JsonFields top(body, "");
  ChatRequest r;
  r.messages = NormalizeMessages(top);
  r.model = top.String("model").value_or("");
  r.options = ParseOpenAiOptions(top, limits, std::nullopt);
  r.stream = ParseStreamOptions(top);
  std::optional<bool> logprobs = top.Bool("logprobs");
  std::optional<int64_t> top_logprobs = top.Int("top_logprobs", 0, INT64_MAX, "usize");
  if (top_logprobs && *top_logprobs > limits.max_top_n_tokens) {
    throw ValidationError(StrCat("`top_logprobs` must be >= 0 and <= ", limits.max_top_n_tokens,
                                 ". Given: ", *top_logprobs),
                          "top_logprobs");
  }
  if (top_logprobs && *top_logprobs > 0 && !logprobs.value_or(false)) {
    throw ValidationError("when using `top_logprobs`, `logprobs` must be set to true.",
                          "top_logprobs");
  }
  r.options.logprobs = logprobs.value_or(false);
  r.options.top_n_tokens = static_cast<int32_t>(top_logprobs.value_or(0));
  r.add_generation_prompt = top.Bool("add_generation_prompt").value_or(true);
  RejectResponseFormat(top);
  RejectTools(top);
  return r;
}

}  // namespace kiln::api
