// Console report in GuideLLM's layout: run metadata, a per-benchmark info table, a summary of
// rates and latencies, then the percentile table of each benchmark.
#include "bench/report.h"
#include "bench/report_rows.h"
#include "bench/text_table.h"
#include "util/error.h"

namespace kiln::bench {
namespace {

std::string Triple(const DistributionSummary& d, int digits) {
  if (d.count == 0) return "-";
  return FormatFixed(d.mean, digits) + " / " + FormatFixed(d.median, digits) + " / " +
         FormatFixed(d.Percentile(0.99), digits);
}

std::string Metadata(const RunInfo& i) {
  std::string out = "Benchmarks Metadata\n";
  out += "  Target:       " + i.target + " (" + i.backend_type + ", " + i.request_type + ")\n";
  out += "  Model:        " + i.model + "\n";
  out += "  Profile:      " + i.profile + "\n";
  out += "  Data:         " + i.data + "\n";
  out += "  Limits:       " +
         StrCat("max_seconds=", FormatFixed(i.limits.max_seconds, 1),
                " max_requests=", i.limits.max_requests, " max_concurrency=", i.max_concurrency) +
         "\n";
  for (const std::string& w : i.warnings) out += "  Warning:      " + w + "\n";
  return out;
}

std::string InfoTable(const Report& report) {
  TextTable t({"Benchmark", "Start", "End", "Duration (s)", "Successful", "Incomplete", "Errored",
               "Prompt tok (mean)", "Output tok (mean)"});
  const double epoch = report.info.epoch_unix;
  for (const BenchmarkReport& b : report.benchmarks) {
    const BenchmarkMetrics& m = b.metrics;
    t.AddRow({b.result.strategy.Label(), FormatUnixTime(b.result.start + epoch).substr(11),
              FormatUnixTime(b.result.end + epoch).substr(11), FormatFixed(m.duration_s, 1),
              std::to_string(m.totals.successful), std::to_string(m.totals.incomplete),
              std::to_string(m.totals.errored), FormatFixed(m.prompt_tokens.successful.mean, 1),
              FormatFixed(m.output_tokens.successful.mean, 1)});
  }
  return "Benchmarks Info\n" + t.Render();
}

std::string StatsTable(const Report& report) {
  TextTable t({"Benchmark", "Req/s", "Concurrency", "Out tok/s", "Total tok/s",
               "Latency s (mean/med/p99)", "TTFT ms (mean/med/p99)", "ITL ms (mean/med/p99)",
               "TPOT ms (mean/med/p99)"});
  for (const BenchmarkReport& b : report.benchmarks) {
    const BenchmarkMetrics& m = b.metrics;
    t.AddRow({b.result.strategy.Label(), FormatFixed(m.requests_per_second, 2),
              FormatFixed(m.request_concurrency, 2), FormatFixed(m.output_tokens_per_second, 1),
              FormatFixed(m.total_tokens_per_second, 1), Triple(m.request_latency_s.successful, 3),
              Triple(m.ttft_ms.successful, 1), Triple(m.itl_ms.successful, 2),
              Triple(m.tpot_ms.successful, 2)});
  }
  return "Benchmarks Stats (successful requests)\n" + t.Render();
}

std::string PercentileTable(const BenchmarkReport& b) {
  std::vector<std::string> header = {"Metric"};
  for (const StatColumn& c : StatColumns()) header.push_back(c.name);
  TextTable t(header);
  for (const DistributionRow& row : DistributionRows()) {
    const DistributionSummary& d = (b.metrics.*row.field).successful;
    std::vector<std::string> cells = {std::string(row.name) + " (" + row.unit + ")"};
    for (const StatColumn& c : StatColumns()) {
      cells.push_back(d.count == 0 ? "-" : FormatFixed(c.get(d), row.digits));
    }
    t.AddRow(cells);
  }
  return b.result.strategy.Label() + " - " + std::to_string(b.metrics.totals.successful) +
         " successful requests\n" + t.Render();
}

}  // namespace

std::string RenderConsole(const Report& report) {
  std::string out = Metadata(report.info) + "\n" + InfoTable(report) + "\n" + StatsTable(report);
  for (const BenchmarkReport& b : report.benchmarks) out += "\n" + PercentileTable(b);
  return out;
}

}  // namespace kiln::bench
