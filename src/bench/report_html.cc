// The HTML report: one self-contained page (inline CSS and SVG, no scripts or external files)
// that opens offline: run info, summary table, plots against the measured request rate, and
// per-benchmark percentile tables.
#include <cmath>
#include <functional>

#include "bench/report.h"
#include "bench/report_rows.h"
#include "bench/svg_plot.h"
#include "bench/text_table.h"

namespace kiln::bench {
namespace {

constexpr const char* kStyle = R"(
body { font-family: sans-serif; margin: 24px; color: #222; background: #fafafa; }
h1 { font-size: 22px; margin: 0 0 12px; }
h2 { font-size: 17px; margin: 28px 0 8px; border-bottom: 1px solid #ddd; padding-bottom: 4px; }
h3 { font-size: 14px; margin: 18px 0 6px; }
table { border-collapse: collapse; font-size: 12.5px; background: #fff; }
th, td { border: 1px solid #d4d4d4; padding: 3px 8px; text-align: right; }
th { background: #f0f0f0; }
td:first-child, th:first-child { text-align: left; }
.info td { text-align: left; }
.plots { display: flex; flex-wrap: wrap; gap: 16px; }
.plots svg { border: 1px solid #ddd; }
.warn { color: #a15c00; }
.errors { font-family: monospace; font-size: 12px; white-space: pre-wrap; }
)";

std::string Cell(const std::string& text, const char* tag = "td") {
  return std::string("<") + tag + ">" + EscapeXml(text) + "</" + tag + ">";
}

std::string HtmlTable(const std::vector<std::string>& header,
                      const std::vector<std::vector<std::string>>& rows,
                      const char* css_class = "") {
  std::string out = std::string("<table class=\"") + css_class + "\"><tr>";
  for (const std::string& h : header) out += Cell(h, "th");
  out += "</tr>";
  for (const auto& row : rows) {
    out += "<tr>";
    for (const std::string& c : row) out += Cell(c);
    out += "</tr>";
  }
  return out + "</table>";
}

std::string RunSection(const RunInfo& i) {
  std::vector<std::vector<std::string>> rows = {
      {"Target", i.target + " (" + i.backend_type + ", " + i.request_type + ")"},
      {"Model", i.model},
      {"Profile", i.profile},
      {"Data", i.data},
      {"Started", FormatUnixTime(i.epoch_unix)},
      {"Command", i.command_line},
  };
  std::string out = HtmlTable({"Run", ""}, rows, "info");
  for (const std::string& w : i.warnings) out += "<p class=\"warn\">" + EscapeXml(w) + "</p>";
  return out;
}

std::string SummarySection(const Report& report) {
  std::vector<std::vector<std::string>> rows;
  for (const BenchmarkReport& b : report.benchmarks) {
    const BenchmarkMetrics& m = b.metrics;
    rows.push_back(
        {b.result.strategy.Label(), FormatFixed(m.duration_s, 1),
         std::to_string(m.totals.successful), std::to_string(m.totals.incomplete),
         std::to_string(m.totals.errored), FormatFixed(m.requests_per_second, 2),
         FormatFixed(m.request_concurrency, 2), FormatFixed(m.output_tokens_per_second, 1),
         FormatFixed(m.total_tokens_per_second, 1), FormatFixed(m.ttft_ms.successful.median, 1),
         FormatFixed(m.itl_ms.successful.median, 2),
         FormatFixed(m.request_latency_s.successful.median, 3)});
  }
  return "<h2>Summary</h2>" +
         HtmlTable({"Benchmark", "Duration (s)", "Successful", "Incomplete", "Errored", "Req/s",
                    "Concurrency", "Out tok/s", "Total tok/s", "TTFT median (ms)",
                    "ITL median (ms)", "Latency median (s)"},
                   rows);
}

using Pick = std::function<double(const BenchmarkMetrics&)>;

PlotSeries Series(const Report& report, const std::string& name, const std::string& color,
                  const Pick& pick, bool dashed = false) {
  PlotSeries s{name, color, {}, {}, dashed};
  for (const BenchmarkReport& b : report.benchmarks) {
    if (b.metrics.totals.successful == 0) continue;
    s.x.push_back(b.metrics.requests_per_second);
    s.y.push_back(pick(b.metrics));
  }
  return s;
}

PlotSpec LatencyPlot(const Report& report, const std::string& title, const std::string& unit,
                     StatusDistribution BenchmarkMetrics::*field) {
  auto at = [field](double level) {
    return [field, level](const BenchmarkMetrics& m) {
      const DistributionSummary& d = (m.*field).successful;
      return d.count == 0 ? NAN : d.Percentile(level);
    };
  };
  PlotSpec p;
  p.title = title;
  p.x_label = "Requests per second (measured)";
  p.y_label = unit;
  p.series = {Series(report, "median", "#1f77b4", at(0.5)),
              Series(report, "p90", "#ff7f0e", at(0.9), true),
              Series(report, "p99", "#d62728", at(0.99), true)};
  return p;
}

std::string PlotsSection(const Report& report) {
  PlotSpec throughput;
  throughput.title = "Throughput vs request rate";
  throughput.x_label = "Requests per second (measured)";
  throughput.y_label = "tokens/s";
  throughput.series = {
      Series(report, "output tokens/s", "#2ca02c",
             [](const BenchmarkMetrics& m) { return m.output_tokens_per_second; }),
      Series(
          report, "total tokens/s", "#9467bd",
          [](const BenchmarkMetrics& m) { return m.total_tokens_per_second; }, true)};
  std::string out = "<h2>Latency and throughput vs request rate</h2><div class=\"plots\">";
  out +=
      RenderSvgPlot(LatencyPlot(report, "Time to first token", "ms", &BenchmarkMetrics::ttft_ms));
  out += RenderSvgPlot(LatencyPlot(report, "Inter-token latency", "ms", &BenchmarkMetrics::itl_ms));
  out += RenderSvgPlot(
      LatencyPlot(report, "Request latency", "seconds", &BenchmarkMetrics::request_latency_s));
  out += RenderSvgPlot(throughput);
  return out + "</div>";
}

std::string ErrorSamples(const BenchmarkReport& b) {
  std::string out;
  int shown = 0;
  for (const RequestRecord& r : b.result.records) {
    if (r.status != RequestStatus::kErrored || shown >= 5) continue;
    out += "#" + std::to_string(r.index) + ": " + r.error + "\n";
    ++shown;
  }
  return out.empty() ? ""
                     : "<p>First errors:</p><div class=\"errors\">" + EscapeXml(out) + "</div>";
}

std::string BenchmarkSection(const BenchmarkReport& b) {
  std::vector<std::string> header = {"Metric (successful)"};
  for (const StatColumn& c : StatColumns()) header.push_back(c.name);
  std::vector<std::vector<std::string>> rows;
  for (const DistributionRow& row : DistributionRows()) {
    const DistributionSummary& d = (b.metrics.*row.field).successful;
    std::vector<std::string> cells = {std::string(row.name) + " (" + row.unit + ")"};
    for (const StatColumn& c : StatColumns()) {
      cells.push_back(d.count == 0 ? "-" : FormatFixed(c.get(d), row.digits));
    }
    rows.push_back(cells);
  }
  const RequestTotals& t = b.metrics.totals;
  return "<h3>" + EscapeXml(b.result.strategy.Label()) + "</h3><p>" + std::to_string(t.successful) +
         " successful, " + std::to_string(t.incomplete) + " incomplete, " +
         std::to_string(t.errored) + " errored</p>" + HtmlTable(header, rows) + ErrorSamples(b);
}

}  // namespace

std::string RenderHtml(const Report& report) {
  std::string out = "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">";
  out += "<title>kiln bench report</title><style>";
  out += kStyle;
  out += "</style></head><body><h1>kiln bench report</h1>";
  out += RunSection(report.info);
  out += SummarySection(report);
  out += PlotsSection(report);
  out += "<h2>Benchmarks</h2>";
  for (const BenchmarkReport& b : report.benchmarks) out += BenchmarkSection(b);
  out += "<p style=\"color:#888;font-size:11px\">Generated by kiln bench.</p></body></html>\n";
  return out;
}

}  // namespace kiln::bench
