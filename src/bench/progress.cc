#include "bench/progress.h"

#include <unistd.h>

#include "bench/text_table.h"
#include "util/error.h"

namespace kiln::bench {

namespace {
constexpr double kPlainIntervalS = 10;  // non-terminal: one line this often
}

bool ProgressDisplay::IsTerminal(std::FILE* out) { return isatty(fileno(out)) == 1; }

void ProgressDisplay::BeginBenchmark(int64_t number, int64_t planned, const Strategy& strategy) {
  prefix_ = StrCat("[", number, "/", planned, " ", strategy.Label(), "]");
  last_plain_ = -1e9;
}

std::string ProgressDisplay::Line(const std::string& prefix, const ProgressSnapshot& s) {
  std::string time = FormatFixed(s.elapsed, 1) + "s";
  if (s.limits && s.limits->max_seconds > 0)
    time += "/" + FormatFixed(s.limits->max_seconds, 0) + "s";
  std::string sent = std::to_string(s.sent);
  if (s.limits && s.limits->max_requests > 0) sent += "/" + std::to_string(s.limits->max_requests);
  const double tok_s = s.elapsed > 0 ? static_cast<double>(s.output_tokens) / s.elapsed : 0;
  return StrCat(prefix, " ", time, "  sent ", sent, "  ok ", s.successful, "  err ", s.errored,
                "  in flight ", s.in_flight, "  ", FormatFixed(tok_s, 1), " out tok/s  TTFT ",
                FormatFixed(s.ttft_ms_last, 0), " ms");
}

void ProgressDisplay::Update(const ProgressSnapshot& snapshot) {
  const std::string line = Line(prefix_, snapshot);
  if (interactive_) {
    std::fprintf(out_, "\r\033[2K%s", line.c_str());
    line_open_ = true;
  } else if (snapshot.elapsed - last_plain_ >= kPlainIntervalS) {
    std::fprintf(out_, "%s\n", line.c_str());
    last_plain_ = snapshot.elapsed;
  }
  std::fflush(out_);
}

void ProgressDisplay::EndBenchmark(const BenchmarkReport& b) {
  const BenchmarkMetrics& m = b.metrics;
  const std::string summary = StrCat(
      prefix_, " done in ", FormatFixed(m.duration_s, 1), "s: ", m.totals.successful, " ok, ",
      m.totals.incomplete, " incomplete, ", m.totals.errored, " errored; ",
      FormatFixed(m.requests_per_second, 2), " req/s, ", FormatFixed(m.output_tokens_per_second, 1),
      " out tok/s, TTFT median ", FormatFixed(m.ttft_ms.successful.median, 1), " ms, ITL median ",
      FormatFixed(m.itl_ms.successful.median, 2), " ms");
  Message(summary);
}

void ProgressDisplay::Message(const std::string& text) {
  if (interactive_ && line_open_) std::fprintf(out_, "\r\033[2K");
  line_open_ = false;
  std::fprintf(out_, "%s\n", text.c_str());
  std::fflush(out_);
}

}  // namespace kiln::bench
