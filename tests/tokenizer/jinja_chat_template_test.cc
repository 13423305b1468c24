// ChatTemplate's API: RenderChat's variables as transformers passes them, key order, shared
// parsed templates, and real model templates from tests/tokenizer/data/templates.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tokenizer/chat_template.h"

namespace kiln {
namespace {

using Json = nlohmann::ordered_json;

// The model templates next to this file (tests/tokenizer/data/templates).
std::string ReadTemplate(const std::string& name) {
  auto path =
      std::filesystem::path(__FILE__).parent_path() / "data" / "templates" / (name + ".jinja");
  std::ifstream in(path);
  if (!in) ADD_FAILURE() << "cannot read " << path;
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(ChatTemplateTest, RenderChatPassesTransformersVariables) {
  ChatTemplate t = ChatTemplate::Parse(
      "{{ bos_token }}{% for m in messages %}<{{ m.role }}>{{ m.content }}{{ eos_token }}{% endfor "
      "%}"
      "{% if add_generation_prompt %}<assistant>{% endif %}|{{ tools is none }}|{{ documents is "
      "none }}"
      "|{{ enable_thinking }}");
  Json messages = Json::parse(R"([{"role": "user", "content": "hi"}])");
  EXPECT_EQ(t.RenderChat(messages, true, "<s>", "</s>"), "<s><user>hi</s><assistant>|True|True|");
  EXPECT_EQ(t.RenderChat(messages, false, "", "", Json(nullptr), Json{{"enable_thinking", false}}),
            "<user>hi|True|True|False");
}

TEST(ChatTemplateTest, OrderedJsonKeepsKeyOrderForToJson) {
  ChatTemplate t = ChatTemplate::Parse("{{ tools|tojson }}");
  const char* tools = R"({"tools": [{"type": "function", "function": {"name": "f"}}]})";
  EXPECT_EQ(t.Render(Json::parse(tools)), R"([{"type": "function", "function": {"name": "f"}}])");
  // nlohmann::json sorts keys, unlike Python dicts.
  EXPECT_EQ(t.Render(nlohmann::json::parse(tools)),
            R"([{"function": {"name": "f"}, "type": "function"}])");
}

TEST(ChatTemplateTest, ContextMustBeAnObject) {
  EXPECT_THROW(ChatTemplate::Parse("x").Render(Json::array()), ChatTemplateError);
}

TEST(ChatTemplateTest, CopiesShareTheParsedTemplateAndRenderConcurrently) {
  ChatTemplate t = ChatTemplate::Parse(ReadTemplate("qwen3"));
  Json messages = Json::parse(
      R"([{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hi"}])");
  std::string expected = t.RenderChat(messages, true, "", "<|im_end|>");
  std::vector<std::string> got(4);
  std::vector<std::thread> threads;
  for (size_t i = 0; i < got.size(); ++i) {
    threads.emplace_back(
        [&, i, copy = t] { got[i] = copy.RenderChat(messages, true, "", "<|im_end|>"); });
  }
  for (auto& th : threads) th.join();
  for (const auto& g : got) EXPECT_EQ(g, expected);
  EXPECT_EQ(expected,
            "<|im_start|>system\nBe "
            "brief.<|im_end|>\n<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n");
}

TEST(ChatTemplateTest, Qwen25WithToolsMatchesTransformers) {
  ChatTemplate t = ChatTemplate::Parse(ReadTemplate("qwen2_5"));
  Json tools = Json::parse(
      R"([{"type": "function", "function": {"name": "get_weather", "description": "Weather.",
      "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}])");
  Json messages = Json::parse(R"([{"role": "user", "content": "Weather in Paris?"},
      {"role": "assistant", "content": "", "tool_calls": [{"type": "function",
        "function": {"name": "get_weather", "arguments": {"city": "Paris"}}}]},
      {"role": "tool", "content": "21C"}])");
  EXPECT_EQ(
      t.RenderChat(messages, true, "", "<|im_end|>", tools),
      "<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.\n\n"
      "# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
      "You are provided with function signatures within <tools></tools> XML tags:\n<tools>\n"
      R"({"type": "function", "function": {"name": "get_weather", "description": "Weather.", )"
      R"("parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}})"
      "\n</tools>\n\nFor each function call, return a json object with function name and arguments "
      "within <tool_call></tool_call> XML tags:\n<tool_call>\n"
      R"({"name": <function-name>, "arguments": <args-json-object>})"
      "\n</tool_call><|im_end|>\n<|im_start|>user\nWeather in "
      "Paris?<|im_end|>\n<|im_start|>assistant\n"
      "<tool_call>\n"
      R"({"name": "get_weather", "arguments": {"city": "Paris"}})"
      "\n</tool_call><|im_end|>\n<|im_start|>user\n<tool_response>\n21C\n</"
      "tool_response><|im_end|>\n"
      "<|im_start|>assistant\n");
}

TEST(ChatTemplateTest, MistralRejectsRolesThatDoNotAlternate) {
  ChatTemplate t = ChatTemplate::Parse(ReadTemplate("mistral_v0_1"));
  Json ok =
      Json::parse(R"([{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello"},
                            {"role": "user", "content": "Bye"}])");
  EXPECT_EQ(t.RenderChat(ok, true, "<s>", "</s>"),
            "<s>[INST] Hi [/INST]Hello</s>[INST] Bye [/INST]");
  Json bad = Json::parse(R"([{"role": "user", "content": "a"}, {"role": "user", "content": "b"}])");
  try {
    t.RenderChat(bad, true, "<s>", "</s>");
    ADD_FAILURE() << "expected raise_exception";
  } catch (const ChatTemplateError& e) {
    EXPECT_TRUE(e.raised());
    EXPECT_EQ(e.message(), "Conversation roles must alternate user/assistant/user/assistant/...");
  }
}

TEST(ChatTemplateTest, EveryBundledTemplateParses) {
  for (const char* name : {"deepseek_r1", "deepseek_v2", "deepseek_v3", "gemma2", "llama3_1",
                           "llama3_2", "mistral_nemo", "mistral_v0_1", "mistral_v0_3", "phi3_5",
                           "qwen2_5", "qwen3", "smollm2", "smollm3", "zephyr"}) {
    std::string source = ReadTemplate(name);
    ASSERT_FALSE(source.empty()) << name;
    EXPECT_NO_THROW(ChatTemplate::Parse(source)) << name;
  }
}

}  // namespace
}  // namespace kiln
