// The live progress line on stderr. On a terminal it redraws one line in place; otherwise (a
// log file, CI) it prints a plain line every few seconds, so logs stay readable.
#pragma once

#include <cstdio>
#include <string>

#include "bench/benchmark_runner.h"
#include "bench/report.h"

namespace kiln::bench {

class ProgressDisplay {
 public:
  // `interactive`: redraw in place (use IsTerminal(out)).
  ProgressDisplay(std::FILE* out, bool interactive) : out_(out), interactive_(interactive) {}

  void BeginBenchmark(int64_t number, int64_t planned, const Strategy& strategy);
  void Update(const ProgressSnapshot& snapshot);
  // Replaces the progress line by a one-line result.
  void EndBenchmark(const BenchmarkReport& report);
  void Message(const std::string& text);

  static bool IsTerminal(std::FILE* out);
  // The progress text itself (tests).
  static std::string Line(const std::string& prefix, const ProgressSnapshot& s);

 private:
  std::FILE* out_;
  bool interactive_;
  std::string prefix_;
  double last_plain_ = -1e9;
  bool line_open_ = false;
};

}  // namespace kiln::bench
