// JSON schema -> regex: documents the schema allows (in compact form) match, others do not,
// and unsupported constructs are refused naming themselves.
#include "grammar/json_schema_regex.h"

#include <gtest/gtest.h>

#include <string>

#include "grammar/lazy_dfa.h"
#include "grammar/regex_compiler.h"
#include "util/error.h"

namespace kiln::grammar {
namespace {

bool Matches(const std::string& schema, const std::string& doc) {
  const std::string regex = JsonSchemaToRegex(nlohmann::ordered_json::parse(schema));
  ByteNfa nfa(2000000);
  const Fragment f = CompileRegex(regex, nfa);
  nfa.set_start(f.start);
  nfa.set_accept(f.end);
  LazyDfa dfa(std::move(nfa), 100000);
  int32_t s = dfa.start();
  for (char c : doc) {
    s = dfa.Step(s, static_cast<uint8_t>(c));
    if (s == LazyDfa::kDead) return false;
  }
  return dfa.IsAccepting(s);
}

std::string Refusal(const std::string& schema) {
  try {
    JsonSchemaToRegex(nlohmann::ordered_json::parse(schema));
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(JsonSchemaRegex, ObjectsWithRequiredAndOptionalProperties) {
  const std::string s = R"({"type":"object","properties":{"name":{"type":"string"},
      "age":{"type":"integer","minimum":0,"maximum":150},"tags":{"type":"array",
      "items":{"type":"string"},"maxItems":2}},"required":["name"]})";
  EXPECT_TRUE(Matches(s, R"({"name":"Ada"})"));
  EXPECT_TRUE(Matches(s, R"({"name": "Ada", "age": 36})"));
  EXPECT_TRUE(Matches(s, R"({"name":"Ada","tags":["a","b"]})"));
  EXPECT_TRUE(Matches(s, R"({"name":"A\"da\u00e9","age":150,"tags":[]})"));
  EXPECT_FALSE(Matches(s, R"({"age":36})"));                // name is required
  EXPECT_FALSE(Matches(s, R"({"name":"Ada","age":151})"));  // above maximum
  EXPECT_FALSE(Matches(s, R"({"name":"Ada","age":-1})"));   // below minimum
  EXPECT_FALSE(Matches(s, R"({"name":"Ada","tags":["a","b","c"]})"));
  EXPECT_FALSE(Matches(s, R"({"name":"Ada","extra":1})"));  // only listed properties
  EXPECT_FALSE(Matches(s, R"({"name":"Ada",})"));
}

TEST(JsonSchemaRegex, ScalarsEnumsRefsAndFormats) {
  EXPECT_TRUE(Matches(R"({"enum":["red","green",3,null]})", R"("green")"));
  EXPECT_TRUE(Matches(R"({"enum":["red","green",3,null]})", "null"));
  EXPECT_FALSE(Matches(R"({"enum":["red","green",3,null]})", R"("blue")"));
  EXPECT_TRUE(Matches(R"({"const":{"a":[1,2]}})", R"({"a":[1,2]})"));
  EXPECT_TRUE(Matches(R"({"type":["number","null"]})", "-12.5e3"));
  EXPECT_TRUE(Matches(R"({"type":"integer","exclusiveMinimum":-3,"maximum":12})", "-2"));
  EXPECT_FALSE(Matches(R"({"type":"integer","exclusiveMinimum":-3,"maximum":12})", "-3"));
  EXPECT_TRUE(Matches(R"({"type":"integer","minimum":95})", "1000000"));
  EXPECT_FALSE(Matches(R"({"type":"integer","minimum":95})", "94"));
  EXPECT_TRUE(Matches(R"({"type":"string","minLength":2,"maxLength":3})", R"("abc")"));
  EXPECT_FALSE(Matches(R"({"type":"string","minLength":2,"maxLength":3})", R"("abcd")"));
  EXPECT_TRUE(Matches(R"({"type":"string","pattern":"^[A-Z]{3}-[0-9]+$"})", R"("ABC-12")"));
  EXPECT_TRUE(Matches(R"({"type":"string","pattern":"[0-9]"})", R"("ab7cd")"));  // a search
  EXPECT_TRUE(Matches(R"({"type":"string","format":"date"})", R"("2026-12-07")"));
  EXPECT_FALSE(Matches(R"({"type":"string","format":"date"})", R"("2026-13-07")"));
  const std::string tree = R"({"$defs":{"node":{"type":"object","properties":{"v":{"type":
      "integer"},"kids":{"type":"array","items":{"$ref":"#/$defs/node"}}},"required":["v"]}},
      "$ref":"#/$defs/node"})";
  EXPECT_TRUE(Matches(tree, R"({"v":1,"kids":[{"v":2},{"v":3,"kids":[]}]})"));
  EXPECT_TRUE(Matches(R"({"anyOf":[{"type":"boolean"},{"type":"string"}]})", "true"));
  EXPECT_TRUE(Matches(R"({"type":"object"})", R"({"a":[1,"x"],"c":{"b":null}})"));
  // Free-form values nest generic_depth (2) levels: deeper is refused by the constraint.
  EXPECT_FALSE(Matches(R"({"type":"object"})", R"({"a":[1,{"b":null}]})"));
  EXPECT_TRUE(Matches(R"({})", R"([1,"x",false])"));
}

TEST(JsonSchemaRegex, UnsupportedConstructsAreNamed) {
  EXPECT_NE(Refusal(R"({"not":{"type":"string"}})").find("`not`"), std::string::npos);
  EXPECT_NE(Refusal(R"({"type":"integer","multipleOf":3})").find("multipleOf"), std::string::npos);
  EXPECT_NE(Refusal(R"({"$ref":"https://x/y.json"})").find("remote"), std::string::npos);
  EXPECT_NE(Refusal(R"({"$ref":"#/$defs/missing"})").find("points at nothing"), std::string::npos);
  EXPECT_NE(Refusal(R"({"type":"wat"})").find("unknown JSON schema type"), std::string::npos);
  EXPECT_NE(Refusal(R"({"type":"object","properties":{},"required":["a"]})").find("`a`"),
            std::string::npos);
  EXPECT_NE(Refusal(R"({"type":"integer","minimum":5,"maximum":1})").find("above"),
            std::string::npos);
  EXPECT_NE(Refusal(R"({"type":"string","maxLength":99999})").find("out of range"),
            std::string::npos);
}

}  // namespace
}  // namespace kiln::grammar
