// libFuzzer target for chat-template parsing and rendering. What must hold: any input ends in a
// rendered string or a ChatTemplateError, never a crash, hang or leak, and the render limits
// (output size, work, call depth) hold.
//
// Input: a template, then optionally NUL + a JSON object used as the context instead of the
// default conversation. Run: KILN_FUZZ_TARGETS=template scripts/fuzz.sh
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "fuzz_util.h"
#include "tokenizer/chat_template.h"

namespace {

const char* kDefaultContext = R"({
  "messages": [
    {"role": "system", "content": "Be brief."},
    {"role": "user", "content": "Hi <there> & 'you' \"é\""},
    {"role": "assistant", "content": "<think>\nhm\n</think>\n\nHello", "tool_calls": [
      {"id": "call00001", "type": "function", "function": {"name": "f", "arguments": {"a": [1, 2.5, null, true]}}}]},
    {"role": "tool", "content": "42", "tool_call_id": "call00001"}
  ],
  "tools": [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}],
  "add_generation_prompt": true, "bos_token": "<s>", "eos_token": "</s>", "n": 3, "x": 1.5
})";

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view input(reinterpret_cast<const char*>(data), size);
  size_t nul = input.find('\0');
  std::string_view source = input.substr(0, nul);
  static const nlohmann::ordered_json kDefault = nlohmann::ordered_json::parse(kDefaultContext);
  nlohmann::ordered_json context = kDefault;
  if (nul != std::string_view::npos) {
    auto parsed = nlohmann::ordered_json::parse(input.substr(nul + 1), nullptr, false);
    if (parsed.is_object()) context = std::move(parsed);
  }
  kiln::ChatTemplateLimits limits;  // small, so that every input finishes quickly
  limits.max_output_bytes = 1 << 16;
  limits.max_work = 200000;
  limits.max_call_depth = 16;
  limits.max_list_items = 10000;
  try {
    kiln::ChatTemplate t = kiln::ChatTemplate::Parse(source);
    t.set_limits(limits);
    FUZZ_CHECK(t.Render(context).size() <= limits.max_output_bytes);
  } catch (const kiln::ChatTemplateError&) {
  }
  return 0;
}
