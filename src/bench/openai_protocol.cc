#include "bench/openai_protocol.h"

#include <nlohmann/json.hpp>

#include "util/error.h"

namespace kiln::bench {

using nlohmann::json;

RequestType ParseRequestType(const std::string& name) {
  if (name == "text_completions" || name == "/v1/completions") return RequestType::kTextCompletions;
  if (name == "chat_completions" || name == "/v1/chat/completions") {
    return RequestType::kChatCompletions;
  }
  throw Error("--request-type: '" + name + "' (use text_completions or chat_completions)");
}

const char* RequestTypeName(RequestType type) {
  return type == RequestType::kTextCompletions ? "text_completions" : "chat_completions";
}

std::string EndpointPath(RequestType type, const std::string& target_path) {
  std::string base = target_path == "/" ? "" : target_path;
  const bool has_v1 = base.size() >= 3 && base.compare(base.size() - 3, 3, "/v1") == 0;
  if (!has_v1) base += "/v1";
  return base + (type == RequestType::kTextCompletions ? "/completions" : "/chat/completions");
}

std::string BuildRequestBody(RequestType type, const std::string& model, const DataItem& item) {
  json body = json::object();
  if (!model.empty()) body["model"] = model;
  if (type == RequestType::kTextCompletions) {
    body["prompt"] = item.prompt;
  } else if (!item.messages_json.empty()) {
    body["messages"] = json::parse(item.messages_json);
  } else {
    body["messages"] = json::array({{{"role", "user"}, {"content", item.prompt}}});
  }
  body["stream"] = true;
  body["stream_options"] = {{"include_usage", true}};
  if (item.output_tokens > 0) {
    body["max_tokens"] = item.output_tokens;
    body["min_tokens"] = item.output_tokens;
    body["ignore_eos"] = true;
    body["stop"] = nullptr;
  }
  return body.dump();
}

namespace {

bool NonEmptyString(const json& object, const char* key) {
  auto it = object.find(key);
  return it != object.end() && it->is_string() && !it->get_ref<const std::string&>().empty();
}

bool ChoiceHasContent(const json& choice) {
  if (!choice.is_object()) return false;
  if (NonEmptyString(choice, "text")) return true;
  auto delta = choice.find("delta");
  if (delta == choice.end() || !delta->is_object()) return false;
  return NonEmptyString(*delta, "content") || NonEmptyString(*delta, "reasoning_content") ||
         NonEmptyString(*delta, "reasoning");
}

std::optional<int64_t> UsageCount(const json& usage, const char* key) {
  auto it = usage.find(key);
  if (it == usage.end() || !it->is_number_integer()) return std::nullopt;
  return it->get<int64_t>();
}

std::string ErrorText(const json& error) {
  if (error.is_object() && error.contains("message") && error["message"].is_string()) {
    return error["message"].get<std::string>();
  }
  return error.is_string() ? error.get<std::string>() : error.dump();
}

}  // namespace

StreamEventInfo ParseStreamEvent(std::string_view data) {
  StreamEventInfo info;
  const size_t a = data.find_first_not_of(" \t\r\n");
  const size_t b = data.find_last_not_of(" \t\r\n");
  const std::string_view trimmed = a == std::string_view::npos ? "" : data.substr(a, b - a + 1);
  if (trimmed == "[DONE]") {
    info.done = true;
    return info;
  }
  json chunk = json::parse(trimmed, nullptr, false);
  if (chunk.is_discarded() || !chunk.is_object()) {
    info.error = "undecodable stream event: " + std::string(trimmed.substr(0, 200));
    return info;
  }
  if (auto error = chunk.find("error"); error != chunk.end() && !error->is_null()) {
    info.error = ErrorText(*error);
    return info;
  }
  if (auto choices = chunk.find("choices"); choices != chunk.end() && choices->is_array()) {
    for (const json& choice : *choices)
      info.has_content = info.has_content || ChoiceHasContent(choice);
  }
  if (auto usage = chunk.find("usage"); usage != chunk.end() && usage->is_object()) {
    info.prompt_tokens = UsageCount(*usage, "prompt_tokens");
    info.completion_tokens = UsageCount(*usage, "completion_tokens");
  }
  return info;
}

}  // namespace kiln::bench
