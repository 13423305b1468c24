// Everything a `kiln bench` run produced, as the report writers (console, JSON, CSV, HTML)
// read it.
#pragma once

#include <string>
#include <vector>

#include "bench/benchmark_metrics.h"
#include "bench/benchmark_runner.h"

namespace kiln::bench {

struct RunInfo {
  std::string target;
  std::string model;
  std::string backend_type = "openai_http";
  std::string request_type;
  std::string profile;
  std::string data;       // what the prompts are
  std::string tokenizer;  // how prompt tokens were counted
  RunLimits limits;
  int64_t max_concurrency = 0;
  double epoch_unix = 0;  // Unix time of 0 on the records' clock
  std::string command_line;
  std::vector<std::string> warnings;
};

struct BenchmarkReport {
  BenchmarkResult result;
  BenchmarkMetrics metrics;
};

struct Report {
  RunInfo info;
  std::vector<BenchmarkReport> benchmarks;
};

// Adds the metrics of a finished benchmark.
BenchmarkReport MakeBenchmarkReport(BenchmarkResult result);

// Writers. Each returns the whole document.
std::string RenderConsole(const Report& report);  // tables, '|'-delimited (pasteable)
std::string RenderJson(const Report& report);     // full report with every request record
std::string RenderCsv(const Report& report);      // one row per benchmark
std::string RenderHtml(const Report& report);     // self-contained page with inline SVG plots

// Reads a report written by RenderJson back (for `kiln bench --from-report`). Throws
// kiln::Error.
Report ParseJsonReport(const std::string& text);

}  // namespace kiln::bench
