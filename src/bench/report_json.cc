// The JSON report: run info, each benchmark's metrics as GuideLLM names them, and every request
// record (times as Unix seconds).
#include <cmath>
#include <nlohmann/json.hpp>

#include "bench/report.h"
#include "util/error.h"

namespace kiln::bench {

using nlohmann::json;

BenchmarkReport MakeBenchmarkReport(BenchmarkResult result) {
  BenchmarkReport report;
  report.metrics = ComputeMetrics(result.records, result.start, result.end);
  report.result = std::move(result);
  return report;
}

namespace {

constexpr int kFormatVersion = 1;

json DistributionJson(const DistributionSummary& d) {
  json p = json::object();
  for (size_t i = 0; i < kPercentileNames.size(); ++i) p[kPercentileNames[i]] = d.percentiles[i];
  return {{"mean", d.mean},         {"median", d.median},   {"mode", d.mode},
          {"variance", d.variance}, {"std_dev", d.std_dev}, {"min", d.min},
          {"max", d.max},           {"count", d.count},     {"total_sum", d.total_sum},
          {"percentiles", p}};
}

json StatusJson(const StatusDistribution& d) {
  return {{"successful", DistributionJson(d.successful)},
          {"incomplete", DistributionJson(d.incomplete)},
          {"errored", DistributionJson(d.errored)},
          {"total", DistributionJson(d.total)}};
}

json OptionalTime(const std::optional<double>& t, double epoch) {
  return t ? json(*t + epoch) : json(nullptr);
}

json OptionalValue(const std::optional<double>& v) { return v ? json(*v) : json(nullptr); }

json RecordJson(const RequestRecord& r, double epoch) {
  return {{"index", r.index},
          {"status", StatusName(r.status)},
          {"scheduled_time", r.scheduled_time + epoch},
          {"request_start", r.request_start + epoch},
          {"first_token_time", OptionalTime(r.first_token_time, epoch)},
          {"last_token_time", OptionalTime(r.last_token_time, epoch)},
          {"request_end", r.request_end + epoch},
          {"prompt_tokens", r.prompt_tokens},
          {"output_tokens", r.output_tokens},
          {"expected_prompt_tokens", r.expected_prompt_tokens},
          {"requested_output_tokens", r.requested_output_tokens},
          {"content_events", r.content_events},
          {"usage_reported", r.usage_reported},
          {"http_status", r.http_status},
          {"error", r.error},
          {"latency_s", r.LatencySeconds()},
          {"ttft_ms", OptionalValue(r.TtftMs())},
          {"itl_ms", OptionalValue(r.ItlMs())},
          {"tpot_ms", OptionalValue(r.TpotMs())}};
}

json StrategyJson(const Strategy& s) {
  return {{"type", s.KindName()},
          {"rate", s.rate},
          {"streams", s.streams},
          {"max_concurrency", s.max_concurrency},
          {"seed", s.seed}};
}

json MetricsJson(const BenchmarkMetrics& m) {
  return {{"requests_per_second", m.requests_per_second},
          {"request_concurrency", m.request_concurrency},
          {"prompt_tokens_per_second", m.prompt_tokens_per_second},
          {"output_tokens_per_second", m.output_tokens_per_second},
          {"tokens_per_second", m.total_tokens_per_second},
          {"request_latency", StatusJson(m.request_latency_s)},
          {"time_to_first_token_ms", StatusJson(m.ttft_ms)},
          {"inter_token_latency_ms", StatusJson(m.itl_ms)},
          {"time_per_output_token_ms", StatusJson(m.tpot_ms)},
          {"prompt_token_count", StatusJson(m.prompt_tokens)},
          {"output_token_count", StatusJson(m.output_tokens)},
          {"total_token_count", StatusJson(m.total_tokens)},
          {"request_streaming_iterations_count", StatusJson(m.streaming_iterations)}};
}

json BenchmarkJson(const BenchmarkReport& b, double epoch) {
  const BenchmarkMetrics& m = b.metrics;
  json requests = json::array();
  for (const RequestRecord& r : b.result.records) requests.push_back(RecordJson(r, epoch));
  return {{"label", b.result.strategy.Label()},
          {"strategy", StrategyJson(b.result.strategy)},
          {"start_time", b.result.start + epoch},
          {"end_time", b.result.end + epoch},
          {"duration", m.duration_s},
          {"request_totals",
           {{"successful", m.totals.successful},
            {"incomplete", m.totals.incomplete},
            {"errored", m.totals.errored},
            {"total", m.totals.total}}},
          {"metrics", MetricsJson(m)},
          {"requests", requests}};
}

json InfoJson(const RunInfo& i) {
  return {{"target", i.target},
          {"model", i.model},
          {"backend_type", i.backend_type},
          {"request_type", i.request_type},
          {"profile", i.profile},
          {"data", i.data},
          {"tokenizer", i.tokenizer},
          {"max_seconds", i.limits.max_seconds},
          {"max_requests", i.limits.max_requests},
          {"max_errors", i.limits.max_errors},
          {"max_concurrency", i.max_concurrency},
          {"start_time", i.epoch_unix},
          {"command_line", i.command_line},
          {"warnings", i.warnings}};
}

}  // namespace

std::string RenderJson(const Report& report) {
  json benchmarks = json::array();
  for (const BenchmarkReport& b : report.benchmarks) {
    benchmarks.push_back(BenchmarkJson(b, report.info.epoch_unix));
  }
  json doc = {{"kiln_bench_report", kFormatVersion},
              {"run", InfoJson(report.info)},
              {"benchmarks", benchmarks}};
  return doc.dump(2) + "\n";
}

namespace {

StrategyKind KindFromName(const std::string& name) {
  for (StrategyKind k :
       {StrategyKind::kSynchronous, StrategyKind::kConcurrent, StrategyKind::kThroughput,
        StrategyKind::kConstant, StrategyKind::kPoisson}) {
    Strategy s;
    s.kind = k;
    if (name == s.KindName()) return k;
  }
  throw Error("report: unknown strategy type '" + name + "'");
}

std::optional<double> TimeFrom(const json& v, double epoch) {
  if (v.is_null()) return std::nullopt;
  return v.get<double>() - epoch;
}

RequestRecord RecordFrom(const json& j, double epoch) {
  RequestRecord r;
  r.index = j.at("index").get<int64_t>();
  const std::string status = j.at("status").get<std::string>();
  r.status = status == "successful"   ? RequestStatus::kSuccessful
             : status == "incomplete" ? RequestStatus::kIncomplete
                                      : RequestStatus::kErrored;
  r.scheduled_time = j.at("scheduled_time").get<double>() - epoch;
  r.request_start = j.at("request_start").get<double>() - epoch;
  r.first_token_time = TimeFrom(j.at("first_token_time"), epoch);
  r.last_token_time = TimeFrom(j.at("last_token_time"), epoch);
  r.request_end = j.at("request_end").get<double>() - epoch;
  r.prompt_tokens = j.at("prompt_tokens").get<int64_t>();
  r.output_tokens = j.at("output_tokens").get<int64_t>();
  r.expected_prompt_tokens = j.value("expected_prompt_tokens", int64_t{-1});
  r.requested_output_tokens = j.value("requested_output_tokens", int64_t{-1});
  r.content_events = j.value("content_events", int64_t{0});
  r.usage_reported = j.value("usage_reported", false);
  r.http_status = j.value("http_status", 0);
  r.error = j.value("error", std::string());
  return r;
}

BenchmarkResult ResultFrom(const json& b, double epoch) {
  BenchmarkResult result;
  const json& s = b.at("strategy");
  result.strategy.kind = KindFromName(s.at("type").get<std::string>());
  result.strategy.rate = s.value("rate", 0.0);
  result.strategy.streams = s.value("streams", int64_t{1});
  result.strategy.max_concurrency = s.value("max_concurrency", int64_t{10240});
  result.strategy.seed = s.value("seed", uint64_t{42});
  result.start = b.at("start_time").get<double>() - epoch;
  result.end = b.at("end_time").get<double>() - epoch;
  for (const json& r : b.at("requests")) result.records.push_back(RecordFrom(r, epoch));
  return result;
}

}  // namespace

Report ParseJsonReport(const std::string& text) {
  json doc = json::parse(text, nullptr, false);
  KILN_CHECK(doc.is_object() && doc.contains("kiln_bench_report"), "not a kiln bench JSON report");
  Report report;
  try {
    const json& run = doc.at("run");
    RunInfo& i = report.info;
    i.target = run.value("target", "");
    i.model = run.value("model", "");
    i.backend_type = run.value("backend_type", "openai_http");
    i.request_type = run.value("request_type", "");
    i.profile = run.value("profile", "");
    i.data = run.value("data", "");
    i.tokenizer = run.value("tokenizer", "");
    i.limits.max_seconds = run.value("max_seconds", 0.0);
    i.limits.max_requests = run.value("max_requests", int64_t{0});
    i.limits.max_errors = run.value("max_errors", int64_t{0});
    i.max_concurrency = run.value("max_concurrency", int64_t{0});
    i.epoch_unix = run.value("start_time", 0.0);
    i.command_line = run.value("command_line", "");
    i.warnings = run.value("warnings", std::vector<std::string>{});
    for (const json& b : doc.at("benchmarks")) {
      report.benchmarks.push_back(MakeBenchmarkReport(ResultFrom(b, i.epoch_unix)));
    }
  } catch (const json::exception& e) {
    throw Error(std::string("kiln bench JSON report: ") + e.what());
  }
  return report;
}

}  // namespace kiln::bench
