#include "bench/bench.h"

#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>

#include "bench/benchmark_runner.h"
#include "bench/dataset.h"
#include "bench/model_discovery.h"
#include "bench/openai_protocol.h"
#include "bench/profile.h"
#include "bench/progress.h"
#include "bench/report.h"
#include "http/client/url.h"
#include "util/error.h"

namespace kiln::bench {
namespace {

using Headers = std::vector<std::pair<std::string, std::string>>;

void WriteFile(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  KILN_CHECK(out.good(), path, ": cannot write the report");
  out << text;
  KILN_CHECK(out.good(), path, ": write failed");
}

bool EndsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

void WriteOutputs(const BenchOptions& o, const Report& report) {
  for (const std::string& path : o.outputs) {
    if (EndsWith(path, ".csv")) {
      WriteFile(path, RenderCsv(report));
    } else if (EndsWith(path, ".html") || EndsWith(path, ".htm")) {
      WriteFile(path, RenderHtml(report));
    } else {
      WriteFile(path, RenderJson(report));
    }
  }
  if (!o.output_csv.empty()) WriteFile(o.output_csv, RenderCsv(report));
  if (!o.output_html.empty()) WriteFile(o.output_html, RenderHtml(report));
}

std::shared_ptr<const PromptTokenizer> MakeTokenizer(const BenchOptions& o, RunInfo& info) {
  if (!o.tokenizer.empty()) return LoadGgufTokenizer(o.tokenizer);
  info.warnings.push_back(
      "no --tokenizer: prompt lengths are counted in words, which approximate tokens; pass the "
      "model's GGUF with --tokenizer for exact counts");
  return MakeWordTokenizer();
}

std::unique_ptr<Dataset> MakeDataset(const BenchOptions& o, const PromptTokenizer& tokenizer,
                                     std::shared_ptr<const PromptTokenizer> shared) {
  DataArg arg = ParseDataArg(o.data);
  if (arg.is_file) return LoadFileDataset(arg.path, &tokenizer);
  SyntheticDataSpec spec = arg.synthetic;
  spec.seed = o.seed;
  auto dataset = MakeSyntheticDataset(spec, std::move(shared));
  int64_t prepare = spec.samples;
  if (o.max_requests > 0) prepare = std::min(prepare, o.max_requests);
  std::fprintf(stderr, "kiln bench: preparing %lld synthetic prompts...\n",
               static_cast<long long>(prepare));
  dataset->Prepare(prepare);
  return dataset;
}

// Finds the model (GET /v1/models) and checks that the target answers at all.
std::string ResolveModel(const BenchOptions& o, boost::asio::io_context& io,
                         http::HttpClient& client, const http::Url& url, const Headers& headers) {
  const std::string path = EndpointPath(RequestType::kTextCompletions, url.path);
  const std::string models =
      path.substr(0, path.size() - std::string("/completions").size()) + "/models";
  DiscoveryResult d = DiscoverModel(io, client, models, headers);
  KILN_CHECK(d.reachable, "cannot reach ", o.target, ": ", d.error);
  if (!o.model.empty()) return o.model;
  KILN_CHECK(d.model.has_value(), "GET ", models, " gave no model (HTTP ", d.status,
             "); name one with --model");
  return *d.model;
}

RunInfo MakeRunInfo(const BenchOptions& o) {
  RunInfo info;
  info.target = o.target;
  info.backend_type = o.backend_type;
  info.request_type = RequestTypeName(ParseRequestType(o.request_type));
  info.profile = o.profile;
  if (!o.rates.empty()) {
    std::ostringstream rates;
    for (size_t i = 0; i < o.rates.size(); ++i) rates << (i ? "," : " rate=") << o.rates[i];
    info.profile += rates.str();
  }
  info.limits = {o.max_seconds, o.max_requests, o.max_errors};
  info.command_line = o.command_line;
  return info;
}

int FromReport(const BenchOptions& o) {
  std::ifstream in(o.from_report);
  KILN_CHECK(in.good(), o.from_report, ": cannot open");
  std::stringstream text;
  text << in.rdbuf();
  Report report = ParseJsonReport(text.str());
  std::cout << RenderConsole(report);
  WriteOutputs(o, report);
  return 0;
}

// Sends Ctrl-C / SIGTERM to the running benchmark, which ends it as its time limit would.
class InterruptHandler {
 public:
  InterruptHandler(boost::asio::io_context& io, BenchmarkRunner& runner)
      : signals_(io, SIGINT, SIGTERM), runner_(runner) {
    Arm();
  }
  ~InterruptHandler() { signals_.cancel(); }
  bool interrupted() const { return interrupted_; }

 private:
  void Arm() {
    signals_.async_wait([this](const boost::system::error_code& ec, int) {
      if (ec) return;
      interrupted_ = true;
      runner_.Interrupt();
      Arm();
    });
  }
  boost::asio::signal_set signals_;
  BenchmarkRunner& runner_;
  bool interrupted_ = false;
};

RequestMaker MakeRequestMaker(RequestType type, const std::string& endpoint, const RunInfo& info,
                              const Headers& headers, Dataset& dataset) {
  return [type, endpoint, model = info.model, headers, &dataset](int64_t index,
                                                                 RequestRecord& record) {
    const DataItem& item = dataset.Get(index);
    record.expected_prompt_tokens = item.prompt_tokens;
    record.requested_output_tokens = item.output_tokens;
    http::ClientRequest request;
    request.target = endpoint;
    request.body = BuildRequestBody(type, model, item);
    request.headers = headers;
    request.headers.emplace_back("Content-Type", "application/json");
    request.headers.emplace_back("Accept", "text/event-stream");
    return request;
  };
}

// Lowers max_concurrency to what the open-file limit allows (one socket per stream).
int64_t FitConcurrency(int64_t wanted, RunInfo& info) {
  const uint64_t files = http::RaiseOpenFileLimit();
  if (files == 0 || static_cast<uint64_t>(wanted) + 64 <= files) return wanted;
  const int64_t fitted = static_cast<int64_t>(files) - 64;
  info.warnings.push_back(
      StrCat("max concurrency lowered to ", fitted, " by the open-file limit (ulimit -n)"));
  return fitted;
}

// Runs the profile's benchmarks one after the other, writing the outputs after each, so that an
// interrupted sweep keeps what it measured.
void RunProfile(const BenchOptions& o, Profile& profile, BenchmarkRunner& runner,
                const InterruptHandler& interrupt, ProgressDisplay& display, Report& report) {
  std::vector<double> measured;
  while (!interrupt.interrupted()) {
    std::optional<Strategy> strategy = profile.Next(measured);
    if (!strategy) break;
    display.BeginBenchmark(static_cast<int64_t>(measured.size()) + 1, profile.planned_count(),
                           *strategy);
    report.benchmarks.push_back(MakeBenchmarkReport(runner.Run(*strategy, report.info.limits)));
    display.EndBenchmark(report.benchmarks.back());
    measured.push_back(report.benchmarks.back().metrics.requests_per_second);
    WriteOutputs(o, report);
  }
  if (interrupt.interrupted())
    display.Message("kiln bench: interrupted; reporting what was measured");
}

}  // namespace

int RunBench(const BenchOptions& o) {
  if (!o.from_report.empty()) return FromReport(o);
  KILN_CHECK(o.backend_type == "openai_http", "--backend-type: only openai_http is supported");
  KILN_CHECK(o.max_seconds > 0 || o.max_requests > 0,
             "give --max-seconds and/or --max-requests: each benchmark needs a bound");
  const RequestType type = ParseRequestType(o.request_type);
  Report report;
  RunInfo& info = report.info;
  info = MakeRunInfo(o);
  info.max_concurrency = FitConcurrency(o.max_concurrency, info);
  Profile profile({o.profile, o.rates, info.max_concurrency, o.seed, o.sweep_strategy});

  const http::Url url = http::ParseUrl(o.target);
  boost::asio::io_context io;
  http::ClientOptions client_options;
  client_options.idle_timeout =
      std::chrono::milliseconds(static_cast<int64_t>(o.request_timeout_s * 1000));
  http::HttpClient client(io, url, client_options);
  Headers headers;
  if (!o.api_key.empty()) headers.emplace_back("Authorization", "Bearer " + o.api_key);
  info.model = ResolveModel(o, io, client, url, headers);

  std::shared_ptr<const PromptTokenizer> tokenizer = MakeTokenizer(o, info);
  info.tokenizer = tokenizer->description();
  std::unique_ptr<Dataset> dataset = MakeDataset(o, *tokenizer, tokenizer);
  info.data = dataset->description();
  for (const std::string& w : info.warnings) {
    std::fprintf(stderr, "kiln bench: warning: %s\n", w.c_str());
  }

  // The records' clock: steady time from now, reported as Unix time from the same instant.
  const http::Clock::time_point epoch = http::Clock::now();
  info.epoch_unix =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  BenchmarkRunner runner(
      io, client, MakeRequestMaker(type, EndpointPath(type, url.path), info, headers, *dataset),
      epoch);
  const bool tty = ProgressDisplay::IsTerminal(stderr);
  ProgressDisplay display(stderr, tty);
  if (o.progress) {
    runner.SetProgress([&display](const ProgressSnapshot& s) { display.Update(s); },
                       tty ? 0.25 : 1.0);
  }
  InterruptHandler interrupt(io, runner);
  RunProfile(o, profile, runner, interrupt, display, report);
  std::cout << "\n" << RenderConsole(report) << std::flush;
  // Failure only when the server answered nothing but errors (or nothing was sent): requests
  // cut off by the time limit are a normal outcome of long generations.
  int64_t answered = 0;
  for (const BenchmarkReport& b : report.benchmarks) {
    answered += b.metrics.totals.successful + b.metrics.totals.incomplete;
  }
  return answered > 0 ? 0 : 1;
}

}  // namespace kiln::bench
