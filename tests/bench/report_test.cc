#include "bench/report.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <sstream>

#include "bench/svg_plot.h"
#include "util/error.h"

namespace kiln::bench {
namespace {

BenchmarkResult MakeResult(StrategyKind kind, double rate, int n, double ttft_s) {
  BenchmarkResult r;
  r.strategy.kind = kind;
  r.strategy.rate = rate;
  r.start = 100;
  r.end = 100 + n * 0.5 + 1;
  for (int i = 0; i < n; ++i) {
    RequestRecord rec;
    rec.index = i;
    rec.status = i == n - 1 ? RequestStatus::kIncomplete : RequestStatus::kSuccessful;
    rec.scheduled_time = rec.request_start = 100 + i * 0.5;
    rec.first_token_time = rec.request_start + ttft_s + 0.001 * i;
    rec.last_token_time = *rec.first_token_time + 0.8;
    rec.request_end = *rec.last_token_time + 0.01;
    rec.prompt_tokens = 64;
    rec.output_tokens = 9;
    rec.http_status = 200;
    r.records.push_back(rec);
  }
  RequestRecord failed;
  failed.index = n;
  failed.request_start = failed.request_end = 101;
  failed.error = "HTTP 503: <busy> & \"quoted\"";
  r.records.push_back(failed);
  return r;
}

Report MakeReport() {
  Report report;
  report.info.target = "http://127.0.0.1:8080";
  report.info.model = "tiny";
  report.info.request_type = "text_completions";
  report.info.profile = "sweep";
  report.info.data = "synthetic: prompt_tokens 64";
  report.info.epoch_unix = 1.7e9;
  report.info.warnings = {"words approximate tokens"};
  report.benchmarks.push_back(
      MakeBenchmarkReport(MakeResult(StrategyKind::kSynchronous, 0, 20, 0.05)));
  report.benchmarks.push_back(
      MakeBenchmarkReport(MakeResult(StrategyKind::kThroughput, 0, 40, 0.2)));
  report.benchmarks.push_back(
      MakeBenchmarkReport(MakeResult(StrategyKind::kConstant, 1.5, 30, 0.1)));
  return report;
}

TEST(Report, ConsoleHasTheTablesOfEveryBenchmark) {
  const std::string text = RenderConsole(MakeReport());
  for (const char* needle :
       {"Benchmarks Info", "Benchmarks Stats", "synchronous", "throughput", "constant@1.50",
        "Time to first token (ms)", "Inter-token latency (ms)", "p99 |", "Warning:"}) {
    EXPECT_NE(text.find(needle), std::string::npos) << needle;
  }
  // Every table line has the same width within its table: the first two lines of the info one.
  std::istringstream lines(text.substr(text.find("Benchmarks Info")));
  std::string title, header, rule;
  std::getline(lines, title);
  std::getline(lines, header);
  std::getline(lines, rule);
  EXPECT_EQ(header.size(), rule.size());
}

TEST(Report, JsonHasGuideLlmNamesAndRawRecordsAndRoundTrips) {
  const Report report = MakeReport();
  nlohmann::json doc = nlohmann::json::parse(RenderJson(report));
  ASSERT_EQ(doc["benchmarks"].size(), 3u);
  const auto& b = doc["benchmarks"][0];
  EXPECT_EQ(b["strategy"]["type"], "synchronous");
  EXPECT_EQ(b["request_totals"]["successful"], 19);
  EXPECT_EQ(b["request_totals"]["incomplete"], 1);
  EXPECT_EQ(b["request_totals"]["errored"], 1);
  EXPECT_TRUE(b["metrics"]["time_to_first_token_ms"]["successful"]["percentiles"].contains("p99"));
  EXPECT_EQ(b["requests"].size(), 21u);
  const auto& r0 = b["requests"][0];
  EXPECT_NEAR(r0["request_start"].get<double>(), 1.7e9 + 100, 1e-3);  // Unix seconds
  EXPECT_NEAR(r0["ttft_ms"].get<double>(), 50, 1e-3);
  EXPECT_TRUE(b["requests"][20]["first_token_time"].is_null());

  // Metrics recomputed from the raw records equal the stored ones.
  const double stored = b["metrics"]["time_to_first_token_ms"]["successful"]["median"];
  Report back = ParseJsonReport(RenderJson(report));
  ASSERT_EQ(back.benchmarks.size(), 3u);
  EXPECT_NEAR(back.benchmarks[0].metrics.ttft_ms.successful.median, stored, 1e-4);
  EXPECT_NEAR(back.benchmarks[2].metrics.output_tokens_per_second,
              report.benchmarks[2].metrics.output_tokens_per_second, 1e-6);
  EXPECT_EQ(back.benchmarks[2].result.strategy.Label(), "constant@1.50");
  EXPECT_EQ(back.info.warnings, report.info.warnings);
  EXPECT_THROW(ParseJsonReport("{}"), Error);
}

TEST(Report, CsvHasOneRowPerBenchmarkAndEqualColumns) {
  const std::string csv = RenderCsv(MakeReport());
  std::istringstream lines(csv);
  std::string line;
  std::vector<size_t> columns;
  while (std::getline(lines, line)) columns.push_back(std::count(line.begin(), line.end(), ','));
  ASSERT_EQ(columns.size(), 4u);
  for (size_t c : columns) EXPECT_EQ(c, columns[0]);
  EXPECT_EQ(csv.rfind("benchmark,strategy,rate", 0), 0u);
  EXPECT_NE(csv.find("ttft_ms_p99"), std::string::npos);
}

TEST(Report, HtmlIsSelfContainedWithFourPlots) {
  const std::string html = RenderHtml(MakeReport());
  size_t svgs = 0;
  for (size_t at = html.find("<svg"); at != std::string::npos; at = html.find("<svg", at + 1)) {
    ++svgs;
  }
  EXPECT_EQ(svgs, 4u);
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(html.find("<link"), std::string::npos);
  EXPECT_EQ(html.find("src="), std::string::npos);
  EXPECT_NE(html.find("<polyline"), std::string::npos);
  EXPECT_NE(html.find("&lt;busy&gt; &amp; &quot;quoted&quot;"), std::string::npos);  // escaped
  EXPECT_EQ(html.find("<busy>"), std::string::npos);
}

TEST(SvgPlot, TicksAreRoundAndCoverTheRange) {
  EXPECT_EQ(NiceTicks(0, 10, 6), (std::vector<double>{0, 2, 4, 6, 8, 10}));
  std::vector<double> t = NiceTicks(0.3, 7.2, 6);
  EXPECT_LE(t.front(), 0.3);
  EXPECT_GE(t.back(), 7.2);
  EXPECT_GE(t.size(), 4u);
}

TEST(SvgPlot, DrawsSeriesInXOrderAndHandlesNoData) {
  PlotSpec spec;
  spec.title = "T <1>";
  spec.series = {{"s", "#1f77b4", {3, 1, 2}, {30, 10, 20}, false}};
  const std::string svg = RenderSvgPlot(spec);
  EXPECT_NE(svg.find("T &lt;1&gt;"), std::string::npos);
  EXPECT_EQ(std::count(svg.begin(), svg.end(), 'c') > 0, true);
  const size_t points = svg.find("points=\"");
  ASSERT_NE(points, std::string::npos);
  // Increasing x along the polyline.
  std::istringstream in(svg.substr(points + 8, svg.find('"', points + 8) - points - 8));
  double last_x = -1, x, y;
  char comma;
  int count = 0;
  while (in >> x >> comma >> y) {
    EXPECT_GT(x, last_x);
    last_x = x;
    ++count;
  }
  EXPECT_EQ(count, 3);
  PlotSpec empty;
  EXPECT_NE(RenderSvgPlot(empty).find("no data"), std::string::npos);
}

}  // namespace
}  // namespace kiln::bench
