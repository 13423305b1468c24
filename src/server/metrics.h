// Prometheus metrics of the server: TGI's tgi_* names (so existing dashboards work), plus
// time-to-first-token, inter-token latency and queue-time histograms and the engine's
// KV-cache and scheduler gauges under kiln_*.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <string_view>

#include "engine/engine.h"
#include "util/histogram.h"
#include "util/recent_samples.h"

namespace kiln {

// Durations in seconds of one finished request.
struct RequestTiming {
  // TGI's split: validation + queue + inference = total (up to the response's own write).
  double total = 0.0;       // arrival -> last event
  double validation = 0.0;  // arrival -> submitted (parse, template, tokenize)
  double queue = 0.0;       // submitted -> first scheduled into an engine step
  double inference = 0.0;   // first scheduled -> last token (prefill + decode)
  double prefill = 0.0;     // first scheduled -> first token
  double decode = 0.0;      // first token -> last token
  int64_t input_tokens = 0;
  int64_t generated_tokens = 0;
  int64_t skipped_tokens = 0;  // of those, accepted speculative drafts
  int64_t max_new_tokens = 0;
};

// Server-side gauges sampled when /metrics is read.
struct ServerGauges {
  int64_t in_flight = 0;           // admitted requests
  int64_t admission_capacity = 0;  // max_concurrent_requests + max_queue
  int64_t max_batch_total_tokens = 0;
  int64_t connections = 0;
  bool draining = false;
};

// Response counts by status class, and the recent latency percentiles (/v1/status).
struct StatusCounts {
  uint64_t responses = 0;  // every route's responses (a stream counts when it starts)
  uint64_t status_4xx = 0;
  uint64_t status_5xx = 0;
  uint64_t status_429 = 0;  // also in status_4xx
  uint64_t generation_requests = 0;
  WindowQuantiles ttft, itl;
};

class Metrics {
 public:
  Metrics(int64_t max_input_tokens, int64_t max_total_tokens);

  void RequestReceived() { requests_.fetch_add(1); }
  void RequestSucceeded(const RequestTiming& t);
  // `reason`: validation, overloaded, generation, incomplete, dropped, template, unavailable.
  void RequestFailed(std::string_view reason);
  void ObserveTimeToFirstToken(double seconds) {
    ttft_.Observe(seconds);
    recent_ttft_.Observe(seconds);
  }
  void ObserveInterTokenLatency(double seconds) {
    itl_.Observe(seconds);
    recent_itl_.Observe(seconds);
  }
  void CountResponse(int status);
  // Latency percentiles over the last `window`.
  StatusCounts Counts(std::chrono::steady_clock::duration window) const;

  // The Prometheus text exposition (version 0.0.4).
  std::string Render(const EngineStats& engine, const ServerGauges& server) const;

 private:
  std::atomic<uint64_t> requests_{0};
  std::atomic<uint64_t> successes_{0};
  mutable std::mutex failures_mu_;
  std::map<std::string, uint64_t, std::less<>> failures_;
  Histogram duration_, validation_, queue_, inference_, time_per_token_;
  Histogram input_length_, generated_tokens_, max_new_tokens_, skipped_tokens_;
  Histogram ttft_, itl_;
  RecentSamples recent_ttft_, recent_itl_;
  std::atomic<uint64_t> responses_{0}, status_4xx_{0}, status_5xx_{0}, status_429_{0};
};

}  // namespace kiln
