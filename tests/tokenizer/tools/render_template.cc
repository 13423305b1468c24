// Renders chat templates for the golden tests (tests/golden/test_chat_templates.py).
// stdin: {"template": "...", "context": {...}} or a JSON array of such cases.
// stdout: {"ok": true, "output": "..."} or {"ok": false, "error": "...", "message": "...",
// "raised": bool} per case (an array for an array). Exit status 0, or 2 for unreadable input.
#include <iostream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string>

#include "tokenizer/chat_template.h"

namespace {

using Json = nlohmann::ordered_json;

Json RenderCase(const Json& c) {
  Json result;
  try {
    kiln::ChatTemplate t = kiln::ChatTemplate::Parse(c.at("template").get<std::string>());
    result["ok"] = true;
    result["output"] = t.Render(c.value("context", Json::object()));
  } catch (const kiln::ChatTemplateError& e) {
    result = {{"ok", false}, {"error", e.what()}, {"message", e.message()}, {"raised", e.raised()}};
  } catch (const std::exception& e) {
    result = {{"ok", false}, {"error", e.what()}, {"message", e.what()}, {"raised", false}};
  }
  return result;
}

}  // namespace

int main() {
  Json input;
  try {
    std::string text((std::istreambuf_iterator<char>(std::cin)), std::istreambuf_iterator<char>());
    input = Json::parse(text);
  } catch (const std::exception& e) {
    std::cerr << "render_template: bad input: " << e.what() << "\n";
    return 2;
  }
  Json out;
  if (input.is_array()) {
    out = Json::array();
    for (const Json& c : input) out.push_back(RenderCase(c));
  } else {
    out = RenderCase(input);
  }
  std::cout << out.dump(-1, ' ', false, Json::error_handler_t::replace) << "\n";
  return 0;
}
