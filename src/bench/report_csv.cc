// CSV report: one row per benchmark; distribution columns are over successful requests.
#include <cstdio>

#include "bench/report.h"
#include "bench/report_rows.h"

namespace kiln::bench {
namespace {

std::string Number(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

std::string Quote(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

void Append(std::string& line, const std::string& cell) {
  if (!line.empty()) line += ',';
  line += Quote(cell);
}

std::string Header() {
  std::string line;
  for (const char* name : {"benchmark", "strategy", "rate", "streams", "start_time", "end_time",
                           "duration_s", "successful", "incomplete", "errored", "total",
                           "requests_per_second", "request_concurrency", "prompt_tokens_per_second",
                           "output_tokens_per_second", "total_tokens_per_second"}) {
    Append(line, name);
  }
  for (const DistributionRow& row : DistributionRows()) {
    for (const char* stat : {"mean", "median", "std_dev", "min", "max"}) {
      Append(line, std::string(row.key) + "_" + stat);
    }
    for (const StatColumn& c : StatColumns()) {
      if (c.name[0] == 'p') Append(line, std::string(row.key) + "_" + c.name);
    }
  }
  return line + "\n";
}

std::string Row(const BenchmarkReport& b, double epoch) {
  const BenchmarkMetrics& m = b.metrics;
  const Strategy& s = b.result.strategy;
  std::string line;
  Append(line, s.Label());
  Append(line, s.KindName());
  Append(line, Number(s.rate));
  Append(line, std::to_string(s.streams));
  for (double v : {b.result.start + epoch, b.result.end + epoch}) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.3f", v);
    Append(line, buf);
  }
  Append(line, Number(m.duration_s));
  for (int64_t v : {m.totals.successful, m.totals.incomplete, m.totals.errored, m.totals.total}) {
    Append(line, std::to_string(v));
  }
  for (double v : {m.requests_per_second, m.request_concurrency, m.prompt_tokens_per_second,
                   m.output_tokens_per_second, m.total_tokens_per_second}) {
    Append(line, Number(v));
  }
  for (const DistributionRow& row : DistributionRows()) {
    const DistributionSummary& d = (m.*row.field).successful;
    for (double v : {d.mean, d.median, d.std_dev, d.min, d.max}) Append(line, Number(v));
    for (const StatColumn& c : StatColumns()) {
      if (c.name[0] == 'p') Append(line, Number(c.get(d)));
    }
  }
  return line + "\n";
}

}  // namespace

std::string RenderCsv(const Report& report) {
  std::string out = Header();
  for (const BenchmarkReport& b : report.benchmarks) out += Row(b, report.info.epoch_unix);
  return out;
}

}  // namespace kiln::bench
