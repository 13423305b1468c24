// Runs one benchmark: sends requests with one strategy's timing through the HTTP client until a
// limit is reached, and records every request. Single-threaded: everything happens on the
// io_context thread that Run() drives.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "bench/request_record.h"
#include "bench/strategy.h"
#include "http/client/http_client.h"

namespace boost::asio {
class io_context;
}

namespace kiln::bench {

struct RunLimits {
  double max_seconds = 0;    // 0: none. At the limit, requests in flight become incomplete.
  int64_t max_requests = 0;  // 0: none. Stops sending after this many; waits for them to end.
  int64_t max_errors = 0;    // 0: none. Stops like max_seconds once this many have failed.
};

struct BenchmarkResult {
  Strategy strategy;
  double start = 0;                    // on the records' clock
  double end = 0;                      // last request ended, or the cut-off
  std::vector<RequestRecord> records;  // ordered by index
};

// What the progress display shows, refreshed while a benchmark runs.
struct ProgressSnapshot {
  const Strategy* strategy = nullptr;
  double elapsed = 0;
  const RunLimits* limits = nullptr;
  int64_t sent = 0, successful = 0, errored = 0, in_flight = 0;
  int64_t output_tokens = 0;  // of successful requests
  double ttft_ms_last = 0;    // TTFT of the most recent successful request
};

// Makes the HTTP request for data item `index` and fills the record's expected token counts.
using RequestMaker = std::function<http::ClientRequest(int64_t index, RequestRecord& record)>;

class BenchmarkRunner {
 public:
  // Record times are seconds since `epoch`. Data items are numbered across benchmarks, so each
  // benchmark of a sweep sends new prompts.
  BenchmarkRunner(boost::asio::io_context& io, http::HttpClient& client, RequestMaker maker,
                  http::Clock::time_point epoch);

  void SetProgress(std::function<void(const ProgressSnapshot&)> callback, double interval_s);

  // Throws kiln::Error when no limit is given (the run would never end).
  BenchmarkResult Run(const Strategy& strategy, const RunLimits& limits);
  // Ends the running benchmark now, as its time limit would (for Ctrl-C). Call on the
  // io_context thread, e.g. from a signal_set handler.
  void Interrupt();

  class Session;

 private:
  boost::asio::io_context& io_;
  http::HttpClient& client_;
  RequestMaker maker_;
  http::Clock::time_point epoch_;
  int64_t next_index_ = 0;
  std::function<void(const ProgressSnapshot&)> progress_;
  double progress_interval_s_ = 0.5;
  std::weak_ptr<Session> current_;
};

}  // namespace kiln::bench
