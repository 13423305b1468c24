// `kiln bench`: load-tests an OpenAI-compatible endpoint over HTTP and reports GuideLLM's
// metrics. Talks HTTP only; never links the engine.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace kiln::bench {

struct BenchOptions {
  std::string target = "http://localhost:8080";
  std::string model;  // empty: the first of GET /v1/models
  std::string api_key;
  std::string backend_type = "openai_http";
  std::string request_type = "text_completions";
  std::string profile = "sweep";
  std::vector<double> rates;
  std::string sweep_strategy = "constant";
  double max_seconds = 0;
  int64_t max_requests = 0;
  int64_t max_errors = 0;
  int64_t max_concurrency = 10240;
  std::string data = "prompt_tokens=256,output_tokens=128";
  std::string tokenizer;  // GGUF path; empty: words approximate tokens
  uint64_t seed = 42;
  double request_timeout_s = 300;    // no byte for this long fails a request
  std::vector<std::string> outputs;  // by extension: .json, .csv, .html
  std::string output_csv, output_html;
  std::string from_report;  // re-render a saved JSON report instead of running
  bool progress = true;
  std::string command_line;
};

// Runs the benchmarks, prints the console report on stdout and writes the outputs. Returns the
// process exit code: 1 when no request succeeded or ran into the time limit (all failed, or none
// was sent), else 0. Throws kiln::Error on bad options or an unreachable target.
int RunBench(const BenchOptions& options);

}  // namespace kiln::bench
