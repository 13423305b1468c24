#include "top/report.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "top/format.h"

namespace kiln::top {
namespace {

TargetView UpTarget() {
  TargetView t;
  t.url = "http://127.0.0.1:3000";
  StatusSnapshot a;
  a.model = "tiny-model";
  a.uptime_s = 10.0;
  a.cores = {{0, 1.0}};
  a.kv_total = 64;
  StatusSnapshot b = a;
  b.uptime_s = 11.0;
  b.cores = {{0, 1.8}};
  b.generated_tokens = 42;
  t.Update(a);
  t.Update(b);
  return t;
}

TEST(Report, PlainShowsModelUtilizationAndRates) {
  HostInfo host;
  host.cpu_model = "Test CPU";
  host.cpus = 2;
  const std::string text = PlainReport(host, {UpTarget()});
  EXPECT_NE(text.find("Test CPU"), std::string::npos) << text;
  EXPECT_NE(text.find("tiny-model"), std::string::npos) << text;
  EXPECT_NE(text.find("core 0"), std::string::npos) << text;
  EXPECT_NE(text.find("80.0%"), std::string::npos) << text;
  EXPECT_NE(text.find("generated 42 (42.0/s)"), std::string::npos) << text;
}

TEST(Report, DownAndNotKilnTargetsSaySo) {
  TargetView down;
  down.url = "http://127.0.0.1:1";
  down.Fail(Health::kUnreachable, "Connection refused");
  TargetView other;
  other.url = "http://127.0.0.1:2";
  other.Fail(Health::kNotKiln, "not a Kiln server: GET /v1/status answered HTTP 404");
  const std::string text = PlainReport(HostInfo{}, {down, other});
  EXPECT_NE(text.find("unreachable"), std::string::npos) << text;
  EXPECT_NE(text.find("Connection refused"), std::string::npos) << text;
  EXPECT_NE(text.find("not a Kiln server"), std::string::npos) << text;
}

TEST(Report, JsonHasStateStatusAndRates) {
  TargetView down;
  down.url = "http://127.0.0.1:1";
  down.Fail(Health::kUnreachable, "refused");
  HostInfo host;
  host.cpus = 2;
  const nlohmann::json j = JsonReport(host, {UpTarget(), down});
  ASSERT_EQ(j["targets"].size(), 2u);
  EXPECT_EQ(j["targets"][0]["state"], "up");
  EXPECT_EQ(j["targets"][0]["status"]["model"], "tiny-model");
  EXPECT_NEAR(j["targets"][0]["rates"]["core_utilization_pct"][0].get<double>(), 80.0, 1e-9);
  EXPECT_EQ(j["targets"][1]["state"], "unreachable");
  EXPECT_EQ(j["targets"][1]["error"], "refused");
  EXPECT_EQ(j["host"]["cpus"], 2);
}

TEST(Format, Units) {
  EXPECT_EQ(FormatBytes(512), "512 B");
  EXPECT_EQ(FormatBytes(3 * 1024 * 1024 / 2), "1.5 MiB");
  EXPECT_EQ(FormatUptime(59), "59s");
  EXPECT_EQ(FormatUptime(3 * 60 + 4), "3m04s");
  EXPECT_EQ(FormatUptime(2 * 3600 + 5 * 60), "2h05m");
  EXPECT_EQ(FormatLatency(0.0123, 3), "12.3 ms");
  EXPECT_EQ(FormatLatency(0.0, 0), "-");
  EXPECT_EQ(Bar(50, 10), "[#####.....]");
  EXPECT_EQ(Bar(150, 4), "[####]");
}

}  // namespace
}  // namespace kiln::top
