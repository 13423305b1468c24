// Jinja statements and whitespace control. Expected outputs were produced by jinja2 3.1 configured
// like transformers' apply_chat_template (ImmutableSandboxedEnvironment, trim_blocks,
// lstrip_blocks, loopcontrols).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "tokenizer/chat_template.h"

namespace kiln {
namespace {

const char* kContext =
    R"J({"x": [1, 2, 3], "d": {"b": 1, "a": [1, 2]}, "s": "Hello World", "n": null, "f": 2.5, "e": "", "msgs": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}, {"role": "user", "content": "bye"}], "u": "é ü ß", "t": true})J";

struct Case {
  const char* source;
  const char* expected;
};

std::string Render(const char* source) {
  return ChatTemplate::Parse(source).Render(nlohmann::ordered_json::parse(kContext));
}

TEST(JinjaStatementTest, MatchesJinja2) {
  const Case cases[] = {
      // if / elif / else.
      {"{% if x %}yes{% elif d %}no{% else %}maybe{% endif %}{% if n %}1{% elif e %}2{% else %}3{% "
       "endif %}",
       "yes3"},
      // for: loop variables, filtering, else, unpacking, loop controls, nesting, scoping.
      {"{% for i in x %}{{ loop.index }}{{ loop.index0 }}{{ loop.revindex }}{{ loop.revindex0 }}{{ "
       "loop.first }}{{ loop.last }}{{ loop.length }};{% endfor %}",
       "1032TrueFalse3;2121FalseFalse3;3210FalseTrue3;"},
      {"{% for i in x %}{{ loop.previtem }}<{{ i }}>{{ loop.nextitem }} {{ loop.cycle('a', 'b') "
       "}};{% endfor %}",
       "<1>2 a;1<2>3 b;2<3> a;"},
      {"{% for i in x if i != 2 %}{{ loop.index }}:{{ i }}/{{ loop.length }} {% endfor %}",
       "1:1/2 2:3/2 "},
      {"{% for i in [] %}x{% else %}empty{% endfor %} {% for i in x if i > 5 %}x{% else %}none{% "
       "endfor %}",
       "empty none"},
      {"{% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %} {% for k in d %}{{ k }}{% endfor "
       "%} {% for c in 'ab' %}{{ c }}.{% endfor %} {% for a, b in [(1, 2), [3, 4]] %}{{ a + b }}{% "
       "endfor %}",
       "b=1;a=[1, 2]; ba a.b. 37"},
      {"{% for i in x %}{% if i == 2 %}{% continue %}{% endif %}{% if i == 3 %}{% break %}{% endif "
       "%}{{ i }}{% endfor %}",
       "1"},
      {"{% for i in x %}{% for j in x %}{{ loop.index }}{% endfor %}|{{ loop.index }} {% endfor %}",
       "123|1 123|2 123|3 "},
      {"{% set a = 1 %}{% for i in x %}{% set a = i %}{{ a }}{% endfor %}{{ a }}{% if true %}{% "
       "set a = 9 %}{% endif %}{{ a }}",
       "12319"},
      {"{% for i in [1, 2] %}{% if i == 2 %}[{{ y }}]{% endif %}{% set y = i %}{% endfor %}", "[]"},
      // set: tuples, namespaces, blocks.
      {"{% set a, b = 1, 2 %}{{ a }}{{ b }}{% set p = [3, 4] %}{% set q, r = p %}{{ q }}{{ r }}",
       "1234"},
      {"{% set ns = namespace(total=0, seen=false) %}{% for i in x %}{% set ns.total = ns.total + "
       "i %}{% if i == 2 %}{% set ns.seen = true %}{% endif %}{% endfor %}{{ ns.total }} {{ "
       "ns.seen }} {{ ns }}",
       "6 True <Namespace {'total': 6, 'seen': True}>"},
      {"{% set block %}Hello {{ s }}{% endset %}[{{ block }}]{% set up | upper %}abc{% endset %}{{ "
       "up }}",
       "[Hello Hello World]ABC"},
      // macro, call, filter, raw, with, comments.
      {"{% macro greet(name, punct='!') %}Hi {{ name }}{{ punct }}{% endmacro %}{{ greet('Bob') }} "
       "{{ greet('Al', '?') }} {{ greet(name='Z', punct='.') }} {{ greet() }}",
       "Hi Bob! Hi Al? Hi Z. Hi !"},
      {"{% macro m() %}{{ varargs }}{{ kwargs }}{% endmacro %}{{ m(1, 2, a=3) }}",
       "(1, 2){'a': 3}"},
      {"{% macro wrap() %}<{{ caller() }}>{% endmacro %}{% call wrap() %}inner {{ s }}{% endcall "
       "%}",
       "<inner Hello World>"},
      {"{% macro each(items) %}{% for i in items %}{{ caller(i) }}{% endfor %}{% endmacro %}{% "
       "call(item) each(x) %}[{{ item }}]{% endcall %}",
       "[1][2][3]"},
      {"{% filter upper %}abc {{ s }}{% endfilter %}{% filter trim | upper %}  x  {% endfilter %}",
       "ABC HELLO WORLDX"},
      {"{% raw %}{{ not evaluated }}{% endraw %}  {% raw -%}  x  {%- endraw %}",
       "{{ not evaluated }}  x"},
      {"{% with a = 5, b = 6 %}{{ a + b }}{% endwith %}[{{ a }}]", "11[]"},
      {"{# comment #}a{#- trimmed -#}  b", "ab"},
      // Whitespace control: - strips, + keeps, trim_blocks and lstrip_blocks as transformers sets
      // them.
      {"{%- if true -%}  a  {%- endif -%}  b{{- ' c ' -}}  d  {{ 'e' }}", "ab c d  e"},
      {R"J(  {% if true %}
  a
  {% endif %}
  b  {# c #}
  {#- d #}  e
{{- "x" }})J",
       R"J(  a
  b    ex)J"},
      {R"J(line1
    {% for i in x %}
    item {{ i }}
    {% endfor %}
end
)J",
       R"J(line1
    item 1
    item 2
    item 3
end)J"},
      {R"J({% if true %}
x
{% endif %}
y
)J",
       R"J(x
y)J"},
      {R"J(a
{%+ if true %}b{% endif +%}
c)J",
       R"J(a
b
c)J"},
      {R"J({{ 'a' }}
{{ 'b' }}
)J",
       R"J(a
b)J"},
      {R"J(  {{ 'keep' }}  {% if true %}  x{% endif %}
)J",
       "  keep    x"},
      {R"J({% for m in msgs %}
{{ m.role }}: {{ m.content }}
{% endfor %})J",
       R"J(user: hi
assistant: yo
user: bye
)J"},
      {R"J({%- for m in msgs -%}
  {{- m.role -}}
{%- endfor %})J",
       "userassistantuser"},
      {R"J(a
b
c

)J",
       R"J(a
b
c
)J"},
      {R"J({{ {'a': {'b': 1}}['a']['b'] }} {{ '}}' }} {{ "%}" }})J", "1 }} %}"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.source);
    try {
      EXPECT_EQ(Render(c.source), c.expected);
    } catch (const Error& e) {
      ADD_FAILURE() << e.what();
    }
  }
}

TEST(JinjaStatementTest, GenerationBlockRendersItsBody) {
  // transformers' {% generation %} marks assistant text; rendering is unchanged.
  EXPECT_EQ(Render("a{% generation %}{% set z = 1 %}b{% endgeneration %}{{ z }}c"), "abc");
}

TEST(JinjaStatementTest, NamespaceKeepsStateAcrossIterations) {
  EXPECT_EQ(Render("{% set ns = namespace(last=none) %}{% for m in msgs %}{% if m.role == 'user' %}"
                   "{% set ns.last = loop.index0 %}{% endif %}{% endfor %}{{ ns.last }}"),
            "2");
}

}  // namespace
}  // namespace kiln
