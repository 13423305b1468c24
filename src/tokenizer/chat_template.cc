#include "tokenizer/chat_template.h"

#include "tokenizer/jinja/parser.h"

namespace kiln {
namespace {

using jinja::Value;

template <typename Json>
Value FromJson(const Json& j, int depth) {
  if (depth > jinja::kMaxValueDepth) jinja::Fail("template input nested too deeply");
  switch (j.type()) {
    case nlohmann::json::value_t::null:
      return Value::None();
    case nlohmann::json::value_t::boolean:
      return Value::Bool(j.template get<bool>());
    case nlohmann::json::value_t::number_integer:
      return Value::Int(j.template get<int64_t>());
    case nlohmann::json::value_t::number_unsigned: {
      auto u = j.template get<uint64_t>();
      return u <= static_cast<uint64_t>(INT64_MAX) ? Value::Int(static_cast<int64_t>(u))
                                                   : Value::Float(static_cast<double>(u));
    }
    case nlohmann::json::value_t::number_float:
      return Value::Float(j.template get<double>());
    case nlohmann::json::value_t::string:
      return Value::Str(j.template get<std::string>());
    case nlohmann::json::value_t::array: {
      std::vector<Value> items;
      items.reserve(j.size());
      for (const auto& item : j) items.push_back(FromJson(item, depth + 1));
      return Value::MakeList(std::move(items));
    }
    case nlohmann::json::value_t::object: {
      std::vector<std::pair<std::string, Value>> items;
      for (auto it = j.begin(); it != j.end(); ++it)
        items.emplace_back(it.key(), FromJson(it.value(), depth + 1));
      return Value::MakeDict(std::move(items));
    }
    default:
      jinja::Fail("unsupported JSON value in template input");
  }
}

template <typename Json>
std::string RenderWith(const jinja::Template& t, const ChatTemplateLimits& limits,
                       const Json& context) {
  if (!context.is_object()) throw ChatTemplateError("template context must be a JSON object");
  std::vector<std::pair<std::string, Value>> globals;
  for (auto it = context.begin(); it != context.end(); ++it)
    globals.emplace_back(it.key(), FromJson(it.value(), 1));
  jinja::Evaluator ev(limits);
  return ev.Render(t, std::move(globals));
}

}  // namespace

ChatTemplate ChatTemplate::Parse(std::string_view source) {
  ChatTemplate t;
  t.template_ = std::make_shared<const jinja::Template>(jinja::Parse(source));
  return t;
}

std::string ChatTemplate::Render(const nlohmann::json& context) const {
  return RenderWith(*template_, limits_, context);
}

std::string ChatTemplate::Render(const nlohmann::ordered_json& context) const {
  return RenderWith(*template_, limits_, context);
}

}  // namespace kiln
