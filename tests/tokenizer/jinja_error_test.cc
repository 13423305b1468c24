// Template errors: syntax and runtime errors carry the line, raise_exception's message reaches
// the caller untouched, and the sandbox bounds what a hostile template can do.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "tokenizer/chat_template.h"

namespace kiln {
namespace {

using Json = nlohmann::ordered_json;

std::string Render(const std::string& source, const Json& context = Json::object(),
                   const ChatTemplateLimits& limits = {}) {
  ChatTemplate t = ChatTemplate::Parse(source);
  t.set_limits(limits);
  return t.Render(context);
}

// The error Render (or Parse) throws; fails the test when there is none.
ChatTemplateError ErrorOf(const std::string& source, const Json& context = Json::object(),
                          const ChatTemplateLimits& limits = {}) {
  try {
    Render(source, context, limits);
  } catch (const ChatTemplateError& e) {
    return e;
  }
  ADD_FAILURE() << "no error for: " << source;
  return ChatTemplateError("none");
}

TEST(JinjaErrorTest, SyntaxErrorsNameTheLine) {
  EXPECT_EQ(ErrorOf("line 1\n{% if x %}\n{{ 1 + }}\n{% endif %}").line(), 3);
  EXPECT_EQ(ErrorOf("a\nb\n{% unknowntag %}").line(), 3);
  EXPECT_EQ(ErrorOf("{{ 'unterminated }}").line(), 1);
  EXPECT_EQ(ErrorOf("{% for x in y %}\n\nno end").line(), 3);
  EXPECT_GT(ErrorOf("{% if x %}").line(), 0);
  EXPECT_GT(ErrorOf("{# no end").line(), 0);
  EXPECT_GT(ErrorOf("{% raw %} no end").line(), 0);
  EXPECT_GT(ErrorOf("{{ (1 }}").line(), 0);
  EXPECT_GT(ErrorOf("{{ 1 ]] }}").line(), 0);
  EXPECT_GT(ErrorOf("{% endif %}").line(), 0);
}

TEST(JinjaErrorTest, UnsupportedTagsAreSyntaxErrors) {
  for (const char* source :
       {"{% extends 'base' %}", "{% include 'x' %}", "{% import 'x' as y %}",
        "{% block b %}{% endblock %}", "{% for x in y recursive %}{% endfor %}"}) {
    EXPECT_THROW(ChatTemplate::Parse(source), ChatTemplateError) << source;
  }
}

TEST(JinjaErrorTest, LoopControlOutsideALoopIsASyntaxError) {
  EXPECT_THROW(ChatTemplate::Parse("{% break %}"), ChatTemplateError);
  EXPECT_THROW(ChatTemplate::Parse(
                   "{% for i in x %}{% macro m() %}{% continue %}{% endmacro %}{% endfor %}"),
               ChatTemplateError);
}

TEST(JinjaErrorTest, RaiseExceptionKeepsTheMessage) {
  ChatTemplateError e = ErrorOf(
      "{% for m in messages %}\n{% if m.role == 'tool' %}\n"
      "{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') "
      "}}\n"
      "{% endif %}{% endfor %}",
      Json::parse(R"({"messages": [{"role": "tool"}]})"));
  EXPECT_TRUE(e.raised());
  EXPECT_EQ(e.message(), "Conversation roles must alternate user/assistant/user/assistant/...");
  EXPECT_EQ(e.line(), 3);
  EXPECT_NE(std::string(e.what()).find("line 3"), std::string::npos);
}

TEST(JinjaErrorTest, RuntimeErrorsNameTheLine) {
  ChatTemplateError e = ErrorOf("a\nb\n{{ missing.attr }}");
  EXPECT_FALSE(e.raised());
  EXPECT_EQ(e.line(), 3);
  EXPECT_EQ(e.message(), "'missing' is undefined");
}

TEST(JinjaErrorTest, ErrorsAreKilnErrors) {
  EXPECT_THROW(Render("{{ 'a' + 1 }}"), Error);
  EXPECT_THROW(ChatTemplate::Parse("{% if %}"), Error);
}

TEST(JinjaErrorTest, UndefinedFollowsJinja2) {
  EXPECT_EQ(Render("[{{ missing }}][{{ missing|length }}][{{ missing is defined }}]"),
            "[][0][False]");
  EXPECT_EQ(Render("{% for x in missing %}x{% endfor %}ok"), "ok");
  EXPECT_THROW(Render("{{ missing.attr }}"), ChatTemplateError);
  EXPECT_THROW(Render("{{ missing['key'] }}"), ChatTemplateError);
  EXPECT_THROW(Render("{{ missing + 1 }}"), ChatTemplateError);
  EXPECT_THROW(Render("{{ missing() }}"), ChatTemplateError);
  EXPECT_THROW(Render("{{ missing|tojson }}"), ChatTemplateError);
}

TEST(JinjaErrorTest, TypeErrorsFail) {
  for (const char* source :
       {"{{ 'a' + 1 }}", "{{ 1 / 0 }}", "{{ 1 // 0 }}", "{{ 1 % 0 }}",
        "{% for i in none %}{% endfor %}", "{% for i in 5 %}{% endfor %}", "{{ none|length }}",
        "{{ 1 < 'a' }}", "{{ x|nofilter }}", "{{ x is notest }}", "{% set a.b = 1 %}",
        "{% set a, b = [1] %}", "{{ 'x'|round }}", "{{ [1, 'a']|sort }}",
        "{{ 9223372036854775807 + 1 }}", "{{ x[1:2:0] }}", "{{ '%d' % 'x' }}", "{{ {1: 2} }}"}) {
    EXPECT_THROW(Render(source, Json::parse(R"({"x": [1, 2]})")), ChatTemplateError) << source;
  }
}

TEST(JinjaErrorTest, MutatingMethodsAreRefusedAsInTheImmutableSandbox) {
  ChatTemplateError e = ErrorOf("{{ x.append(3) }}", Json::parse(R"({"x": [1]})"));
  EXPECT_NE(e.message().find("unsafe"), std::string::npos);
  EXPECT_THROW(Render("{{ d.update({}) }}", Json::parse(R"({"d": {}})")), ChatTemplateError);
  EXPECT_THROW(Render("{{ d.pop('a') }}", Json::parse(R"({"d": {"a": 1}})")), ChatTemplateError);
}

TEST(JinjaSandboxTest, LoopWorkIsBounded) {
  ChatTemplateLimits limits;
  limits.max_work = 1'000'000;
  ChatTemplateError e =
      ErrorOf("{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}",
              Json::object(), limits);
  EXPECT_NE(e.message().find("work limit"), std::string::npos);
}

TEST(JinjaSandboxTest, OutputSizeIsBounded) {
  ChatTemplateLimits limits;
  limits.max_output_bytes = 1000;
  EXPECT_THROW(Render("{% for i in range(1000) %}xx{% endfor %}", Json::object(), limits),
               ChatTemplateError);
  EXPECT_EQ(Render("{% for i in range(10) %}xx{% endfor %}", Json::object(), limits).size(), 20u);
}

TEST(JinjaSandboxTest, StringGrowthIsBounded) {
  ChatTemplateLimits limits;
  limits.max_output_bytes = 1 << 20;
  EXPECT_THROW(Render("{% set ns = namespace(s='x') %}{% for i in range(100) %}{% set ns.s = ns.s "
                      "~ ns.s %}{% endfor %}",
                      Json::object(), limits),
               ChatTemplateError);
  EXPECT_THROW(Render("{{ 'x' * 1000000000000 }}"), ChatTemplateError);
  EXPECT_THROW(Render("{{ range(1000000)|length }}"), ChatTemplateError);
}

TEST(JinjaSandboxTest, MacroRecursionIsBounded) {
  ChatTemplateError e = ErrorOf("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}");
  EXPECT_NE(e.message().find("depth"), std::string::npos);
  EXPECT_EQ(
      Render(
          "{% macro f(n) %}{% if n > 0 %}{{ n }}{{ f(n - 1) }}{% endif %}{% endmacro %}{{ f(3) }}"),
      "321");
}

TEST(JinjaSandboxTest, DeepNestingIsRejectedNotACrash) {
  std::string parens = "{{ " + std::string(10000, '(') + "1" + std::string(10000, ')') + " }}";
  EXPECT_THROW(ChatTemplate::Parse(parens), ChatTemplateError);
  std::string chain = "{{ 1";
  for (int i = 0; i < 100000; ++i) chain += " + 1";
  EXPECT_THROW(ChatTemplate::Parse(chain + " }}"), ChatTemplateError);
  std::string ifs;
  for (int i = 0; i < 1000; ++i) ifs += "{% if true %}";
  for (int i = 0; i < 1000; ++i) ifs += "{% endif %}";
  EXPECT_THROW(ChatTemplate::Parse(ifs), ChatTemplateError);
  // `1 if 1 else 1 if 1 else ...` recursed once per `else` with no bound: a stack overflow.
  std::string conditional = "{{ 1";
  for (int i = 0; i < 200000; ++i) conditional += " if 1 else 1";
  EXPECT_THROW(ChatTemplate::Parse(conditional + " }}"), ChatTemplateError);
  std::string short_chain = "{{ 0";
  for (int i = 0; i < 50; ++i) short_chain += " if 0 else " + std::to_string(i + 1);
  EXPECT_EQ(Render(short_chain + " }}"), "50");
  EXPECT_THROW(Render("{% set ns = namespace(v=[]) %}{% for i in range(1000) %}{% set ns.v = "
                      "[ns.v] %}{% endfor %}"),
               ChatTemplateError);
}

TEST(JinjaSandboxTest, SelfReferencingNamespaceDoesNotLoop) {
  EXPECT_THROW(Render("{% set ns = namespace() %}{% set ns.me = ns %}{{ ns }}"), ChatTemplateError);
  EXPECT_EQ(Render("{% set ns = namespace() %}{% set ns.me = ns %}{{ ns.me.me is defined }}"),
            "True");
}

TEST(JinjaSandboxTest, DeeplyNestedInputIsRejected) {
  std::string deep = std::string(1000, '[') + std::string(1000, ']');
  EXPECT_THROW(Render("{{ x }}", Json{{"x", Json::parse(deep)}}), ChatTemplateError);
}

}  // namespace
}  // namespace kiln
