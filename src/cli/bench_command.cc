#include "cli/bench_command.h"

#include <fstream>
#include <memory>
#include <string>

#include "bench/bench.h"

namespace kiln {
namespace {

// The command line as typed, for the report (Linux: /proc/self/cmdline).
std::string CommandLine() {
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  for (char& c : all) c = c == '\0' ? ' ' : c;
  while (!all.empty() && all.back() == ' ') all.pop_back();
  return all;
}

void AddTargetOptions(CLI::App* cmd, bench::BenchOptions& o) {
  cmd->add_option("--target", o.target, "Base URL of the OpenAI-compatible server")
      ->capture_default_str();
  cmd->add_option("--model", o.model, "Model name to send (default: first of GET /v1/models)");
  cmd->add_option("--api-key", o.api_key, "Sent as 'Authorization: Bearer KEY'")
      ->envname("OPENAI_API_KEY");
  cmd->add_option("--backend-type", o.backend_type, "Only openai_http")->capture_default_str();
  cmd->add_option("--request-type", o.request_type, "text_completions or chat_completions")
      ->capture_default_str();
  cmd->add_option("--request-timeout", o.request_timeout_s,
                  "Fail a request after this many seconds without a byte")
      ->capture_default_str();
}

void AddLoadOptions(CLI::App* cmd, bench::BenchOptions& o) {
  cmd->add_option("--profile,--rate-type", o.profile,
                  "synchronous, concurrent, throughput, constant, poisson or sweep")
      ->capture_default_str();
  cmd->add_option("--rate", o.rates,
                  "Requests/s (constant, poisson), streams (concurrent) or number of benchmarks "
                  "(sweep, default 10); several values run one benchmark each")
      ->delimiter(',');
  cmd->add_option("--sweep-strategy", o.sweep_strategy, "constant or poisson")
      ->capture_default_str();
  cmd->add_option("--max-seconds", o.max_seconds, "Length of each benchmark");
  cmd->add_option("--max-requests", o.max_requests, "Requests per benchmark");
  cmd->add_option("--max-errors", o.max_errors, "End a benchmark after this many errors");
  cmd->add_option("--max-concurrency", o.max_concurrency, "Most requests in flight at once")
      ->capture_default_str();
  cmd->add_option("--random-seed", o.seed, "Seed of data and Poisson arrivals")
      ->capture_default_str();
}

void AddDataAndOutputOptions(CLI::App* cmd, bench::BenchOptions& o) {
  cmd->add_option("--data", o.data,
                  "Synthetic: prompt_tokens=P,output_tokens=O[,prompt_tokens_stdev=..,"
                  "prompt_tokens_min/max=..,output_tokens_stdev/min/max=..,samples=N]; or a "
                  ".jsonl/.json/.txt file of prompts")
      ->capture_default_str();
  cmd->add_option("--tokenizer", o.tokenizer,
                  "GGUF file whose vocabulary sizes the prompts exactly (default: words)");
  cmd->add_option("--output,--output-path", o.outputs,
                  "Report file; .json (full, with every request), .csv or .html");
  cmd->add_option("--output-csv", o.output_csv, "CSV report file");
  cmd->add_option("--output-html", o.output_html, "HTML report file (self-contained)");
  cmd->add_option("--from-report", o.from_report,
                  "Re-render a saved JSON report (console and --output files) without running");
  cmd->add_flag("!--no-progress,!--disable-progress", o.progress, "No live progress line");
}

}  // namespace

void AddBenchCommand(CLI::App& app) {
  auto options = std::make_shared<bench::BenchOptions>();
  CLI::App* cmd = app.add_subcommand(
      "bench", "Load-test an OpenAI-compatible endpoint (GuideLLM-style profiles and metrics)");
  AddTargetOptions(cmd, *options);
  AddLoadOptions(cmd, *options);
  AddDataAndOutputOptions(cmd, *options);
  cmd->callback([options]() {
    options->command_line = CommandLine();
    const int code = bench::RunBench(*options);
    if (code != 0) throw CLI::RuntimeError(code);
  });
}

}  // namespace kiln
