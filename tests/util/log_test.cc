#include "util/log.h"

#include <gtest/gtest.h>

namespace kiln::log {
namespace {

constexpr int64_t kMicros = 1'796'626'200'123'456;  // 2026-12-07T06:50:00.123456Z

TEST(Log, TextLineKeepsTheOldShapeAndAppendsFields) {
  EXPECT_EQ(FormatLine(Format::kText, Level::kInfo, "kiln", "listening", {}, kMicros),
            "kiln info: listening");
  EXPECT_EQ(FormatLine(Format::kText, Level::kWarn, "kiln::server", "slow",
                       {{"route", std::string_view("/generate")},
                        {"status", int64_t{200}},
                        {"note", std::string_view("two words")},
                        {"ok", true}},
                       kMicros),
            "kiln warn: slow route=/generate status=200 note=\"two words\" ok=true");
}

TEST(Log, JsonLineHasTimestampLevelTargetMessageFields) {
  EXPECT_EQ(FormatLine(Format::kJson, Level::kError, "kiln::router", "replica 1 died",
                       {{"replica", int64_t{1}}, {"seconds", 0.25}}, kMicros),
            "{\"timestamp\":\"2026-12-07T06:50:00.123456Z\",\"level\":\"ERROR\","
            "\"target\":\"kiln::router\",\"message\":\"replica 1 died\","
            "\"fields\":{\"replica\":1,\"seconds\":0.25}}");
  EXPECT_EQ(FormatLine(Format::kJson, Level::kDebug, "kiln", "m", {}, 0),
            "{\"timestamp\":\"1970-01-01T00:00:00.000000Z\",\"level\":\"DEBUG\","
            "\"target\":\"kiln\",\"message\":\"m\"}");
}

TEST(Log, JsonStringsEscapeControlsQuotesAndInvalidUtf8) {
  std::string out;
  AppendJsonString(out, std::string_view("a\"b\\c\n\r\t\x01\x7f\xff\xc3\xa9", 13));
  EXPECT_EQ(out, "\"a\\\"b\\\\c\\n\\r\\t\\u0001\\u007f\xef\xbf\xbd\xc3\xa9\"");
}

TEST(Log, LevelNamesAsTgiAndKilnSpellThem) {
  EXPECT_EQ(ParseLevel("INFO"), Level::kInfo);
  EXPECT_EQ(ParseLevel("warning"), Level::kWarn);
  EXPECT_EQ(ParseLevel("Warn"), Level::kWarn);
  EXPECT_EQ(ParseLevel("trace"), Level::kDebug);
  EXPECT_EQ(ParseLevel("error"), Level::kError);
  EXPECT_EQ(ParseLevel("loud"), std::nullopt);
  EXPECT_EQ(ParseLevel(""), std::nullopt);
}

TEST(Log, Rfc3339RollsOverDays) {
  EXPECT_EQ(Rfc3339Utc(86'400'000'000 - 1), "1970-01-01T23:59:59.999999Z");
  EXPECT_EQ(Rfc3339Utc(86'400'000'000), "1970-01-02T00:00:00.000000Z");
}

}  // namespace
}  // namespace kiln::log

#include "util/child_process.h"

namespace kiln {
namespace {

TEST(RelayedLine, TextKeepsThePrefixJsonAddsTheFields) {
  ChildSpec spec;
  spec.log_prefix = "[replica 1] ";
  spec.json_fields = "\"replica\":1";
  log::SetFormat(log::Format::kText);
  EXPECT_EQ(RelayedLine(spec, "kiln info: hi"), "[replica 1] kiln info: hi");
  log::SetFormat(log::Format::kJson);
  EXPECT_EQ(RelayedLine(spec, "{\"level\":\"INFO\"}"), "{\"replica\":1,\"level\":\"INFO\"}");
  EXPECT_EQ(RelayedLine(spec, "{}"), "{\"replica\":1}");
  // Anything else the child prints (a sanitizer report, a crash) becomes a JSON line.
  const std::string wrapped = RelayedLine(spec, "==123==ERROR: AddressSanitizer \"x\"");
  EXPECT_EQ(wrapped.rfind("{\"replica\":1,\"timestamp\":\"", 0), 0u) << wrapped;
  EXPECT_NE(wrapped.find("\"message\":\"==123==ERROR: AddressSanitizer \\\"x\\\"\""),
            std::string::npos)
      << wrapped;
  log::SetFormat(log::Format::kText);
}

}  // namespace
}  // namespace kiln
