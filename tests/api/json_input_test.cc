#include "api/json_input.h"

#include <gtest/gtest.h>

#include <string>

#include "api/json_fields.h"
#include "api_test_util.h"

namespace kiln::api {
namespace {

TEST(ParseJsonObject, AcceptsAnObject) {
  EXPECT_EQ(ParseJsonObject(R"({"a": [1, {"b": "c"}]})")["a"][1]["b"], "c");
}

TEST(ParseJsonObject, SyntaxErrorsAre400) {
  for (const char* bad : {"", "{", "{\"a\":}", "nul", "{\"a\":1,}", "{'a':1}", "[1,2"}) {
    ApiError e = ExpectApiError([&] { ParseJsonObject(bad); });
    EXPECT_EQ(e.status(), 400) << bad;
    EXPECT_EQ(e.message().rfind("Failed to parse the request body as JSON: ", 0), 0u)
        << e.message();
    EXPECT_EQ(e.type(), "validation");
  }
}

TEST(ParseJsonObject, InvalidUtf8Is400) {
  for (std::string bad : {std::string("{\"inputs\": \"\xff\"}"), std::string("{\"a\": \"\xc3\"}"),
                          std::string("{\"a\": \"\xed\xa0\x80\"}"),  // encoded surrogate
                          std::string("{\"a\": \"\\ud800\"}")}) {    // lone escaped surrogate
    EXPECT_EQ(ExpectApiError([&] { ParseJsonObject(bad); }).status(), 400) << bad;
  }
}

TEST(ParseJsonObject, NumbersOutOfDoubleRangeAre400) {
  EXPECT_EQ(ExpectApiError([] { ParseJsonObject(R"({"a": 1e999})"); }).status(), 400);
  // Huge integers still parse (as floating point); field readers reject them by range.
  EXPECT_NO_THROW(ParseJsonObject(R"({"a": 123456789012345678901234567890})"));
}

TEST(ParseJsonObject, DepthAtLimitPassesAndOneMoreFails) {
  auto nested = [](int depth) {
    return std::string("{\"a\":") + std::string(depth - 1, '[') + std::string(depth - 1, ']') + "}";
  };
  EXPECT_NO_THROW(ParseJsonObject(nested(kMaxJsonDepth)));
  ApiError e = ExpectApiError([&] { ParseJsonObject(nested(kMaxJsonDepth + 1)); });
  EXPECT_EQ(e.status(), 400);
  EXPECT_NE(e.message().find("nesting deeper than 64 levels"), std::string::npos);
  // Brackets inside strings do not count.
  EXPECT_NO_THROW(ParseJsonObject("{\"a\": \"" + std::string(1000, '[') + "\"}"));
  // A million levels: refused quickly, no stack overflow.
  EXPECT_EQ(ExpectApiError([] { ParseJsonObject(std::string(1000000, '[')); }).status(), 400);
}

TEST(ParseJsonObject, NonObjectsAre422) {
  for (const char* doc : {"[]", "1", "\"x\"", "null", "true"}) {
    ApiError e = ExpectApiError([&] { ParseJsonObject(doc); });
    EXPECT_EQ(e.status(), 422) << doc;
    EXPECT_NE(e.message().find("expected an object"), std::string::npos);
  }
}

TEST(JsonFields, NullReadsAsUnset) {
  nlohmann::json doc = J(R"({"a": null, "b": 3})");
  JsonFields f(doc, "p");
  EXPECT_FALSE(f.Has("a"));
  EXPECT_FALSE(f.I32("a").has_value());
  EXPECT_EQ(f.I32("b"), 3);
}

TEST(JsonFields, WrongTypesNameThePath) {
  nlohmann::json doc = J(R"({"t": "hot", "n": 1.5, "b": 1, "l": ["a", 2], "u": -1})");
  JsonFields f(doc, "parameters");
  ApiError e = ExpectApiError([&] { f.F32("t"); });
  EXPECT_EQ(e.status(), 422);
  EXPECT_EQ(e.message(),
            "Failed to deserialize the JSON body into the target type: parameters.t: invalid "
            "type: string, expected f32");
  EXPECT_EQ(e.param(), "t");
  EXPECT_NE(ExpectApiError([&] { f.U32("n"); }).message().find("floating point `1.5`"),
            std::string::npos);
  EXPECT_EQ(ExpectApiError([&] { f.Bool("b"); }).status(), 422);
  EXPECT_NE(ExpectApiError([&] { f.StringList("l", false); }).message().find("parameters.l[1]"),
            std::string::npos);
  EXPECT_NE(ExpectApiError([&] { f.U32("u"); }).message().find("invalid value: integer `-1`"),
            std::string::npos);
}

TEST(JsonFields, IntegerRanges) {
  nlohmann::json doc = J(R"({"big": 1e30, "max": 4294967295, "over": 4294967296,
                             "i": -2147483648, "f": 20.0, "huge": 123456789012345678901234567890})");
  JsonFields f(doc, "");
  EXPECT_EQ(f.U32("max"), 2147483647);  // saturated: past every limit anyway
  EXPECT_EQ(ExpectApiError([&] { f.U32("over"); }).status(), 422);
  EXPECT_EQ(ExpectApiError([&] { f.U32("big"); }).status(), 422);
  EXPECT_EQ(ExpectApiError([&] { f.U32("huge"); }).status(), 422);
  EXPECT_EQ(ExpectApiError([&] { f.Seed("huge", false); }).status(), 422);
  EXPECT_EQ(f.I32("i"), -2147483648);
  EXPECT_EQ(f.U32("f"), 20);
}

TEST(JsonFields, FloatsMustFitF32) {
  nlohmann::json doc = J(R"({"ok": 0.5, "big": 1e300})");
  JsonFields f(doc, "");
  EXPECT_FLOAT_EQ(*f.F32("ok"), 0.5f);
  EXPECT_EQ(ExpectApiError([&] { f.F32("big"); }).status(), 422);
}

TEST(JsonFields, Seeds) {
  nlohmann::json doc = J(R"({"max": 18446744073709551615, "neg": -1})");
  JsonFields f(doc, "");
  EXPECT_EQ(f.Seed("max", false), 18446744073709551615ull);
  EXPECT_EQ(ExpectApiError([&] { f.Seed("neg", false); }).status(), 422);
  EXPECT_EQ(f.Seed("neg", true), 18446744073709551615ull);
}

}  // namespace
}  // namespace kiln::api
