#include "server/metrics.h"

#include <cstdio>

namespace kiln {
namespace {

void Scalar(std::string& out, const char* type, const char* name, const char* help, double value) {
  char buf[48];
  std::snprintf(buf, sizeof(buf), "%.10g", value);
  out += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " " + type + "\n" +
         name + " " + buf + "\n";
}

void Gauge(std::string& out, const char* name, const char* help, double value) {
  Scalar(out, "gauge", name, help, value);
}

void Counter(std::string& out, const char* name, const char* help, double value) {
  Scalar(out, "counter", name, help, value);
}

// llama.cpp's spec_decode counters under kiln_*, and the accepted fraction of each draft.
void RenderSpeculation(std::string& out, const EngineStats& e) {
  const SpeculationCounters& s = e.speculation;
  Gauge(out, "kiln_speculate", "Tokens drafted per sequence and step at most (0: speculation off)",
        e.speculate);
  Counter(out, "kiln_spec_decode_num_drafts_total", "Speculative drafts verified",
          static_cast<double>(s.drafts));
  Counter(out, "kiln_spec_decode_num_draft_tokens_total", "Tokens in the verified drafts",
          static_cast<double>(s.draft_tokens));
  Counter(out, "kiln_spec_decode_num_accepted_tokens_total", "Drafted tokens accepted",
          static_cast<double>(s.accepted_tokens));
  const char* name = "kiln_spec_decode_acceptance_rate";
  out += std::string("# HELP ") + name + " Accepted fraction of each verified draft\n# TYPE " +
         name + " histogram\n";
  int64_t cumulative = 0;
  char le[32];
  for (size_t b = 0; b < s.by_rate.size(); ++b) {
    cumulative += s.by_rate[b];
    std::snprintf(le, sizeof(le), "%g", SpeculationCounters::kRateBounds[b]);
    out += std::string(name) + "_bucket{le=\"" + le + "\"} " + std::to_string(cumulative) + "\n";
  }
  out += std::string(name) + "_bucket{le=\"+Inf\"} " + std::to_string(cumulative) + "\n";
  std::snprintf(le, sizeof(le), "%.10g", s.rate_sum);
  out += std::string(name) + "_sum " + le + "\n";
  out += std::string(name) + "_count " + std::to_string(cumulative) + "\n";
}

}  // namespace

Metrics::Metrics(int64_t max_input_tokens, int64_t max_total_tokens)
    : duration_(Histogram::DurationBuckets()),
      validation_(Histogram::DurationBuckets()),
      queue_(Histogram::DurationBuckets()),
      inference_(Histogram::DurationBuckets()),
      time_per_token_(Histogram::DurationBuckets()),
      input_length_(Histogram::LinearBuckets(static_cast<double>(max_input_tokens), 100)),
      generated_tokens_(Histogram::LinearBuckets(static_cast<double>(max_total_tokens), 100)),
      max_new_tokens_(Histogram::LinearBuckets(static_cast<double>(max_total_tokens), 100)),
      skipped_tokens_(Histogram::LinearBuckets(static_cast<double>(max_total_tokens), 100)),
      ttft_(Histogram::DurationBuckets()),
      itl_(Histogram::DurationBuckets()) {}

void Metrics::RequestSucceeded(const RequestTiming& t) {
  successes_.fetch_add(1);
  duration_.Observe(t.total);
  validation_.Observe(t.validation);
  queue_.Observe(t.queue);
  inference_.Observe(t.inference);
  if (t.generated_tokens > 0) {
    time_per_token_.Observe(t.inference / static_cast<double>(t.generated_tokens));
  }
  input_length_.Observe(static_cast<double>(t.input_tokens));
  generated_tokens_.Observe(static_cast<double>(t.generated_tokens));
  max_new_tokens_.Observe(static_cast<double>(t.max_new_tokens));
  skipped_tokens_.Observe(static_cast<double>(t.skipped_tokens));
}

void Metrics::CountResponse(int status) {
  responses_.fetch_add(1, std::memory_order_relaxed);
  if (status >= 400 && status < 500) status_4xx_.fetch_add(1, std::memory_order_relaxed);
  if (status >= 500) status_5xx_.fetch_add(1, std::memory_order_relaxed);
  if (status == 429) status_429_.fetch_add(1, std::memory_order_relaxed);
}

StatusCounts Metrics::Counts(std::chrono::steady_clock::duration window) const {
  StatusCounts c;
  c.responses = responses_.load(std::memory_order_relaxed);
  c.status_4xx = status_4xx_.load(std::memory_order_relaxed);
  c.status_5xx = status_5xx_.load(std::memory_order_relaxed);
  c.status_429 = status_429_.load(std::memory_order_relaxed);
  c.generation_requests = requests_.load();
  c.ttft = recent_ttft_.Quantiles(window);
  c.itl = recent_itl_.Quantiles(window);
  return c;
}

void Metrics::RequestFailed(std::string_view reason) {
  std::lock_guard<std::mutex> lock(failures_mu_);
  auto it = failures_.find(reason);
  if (it == failures_.end()) it = failures_.emplace(std::string(reason), 0).first;
  ++it->second;
}

std::string Metrics::Render(const EngineStats& e, const ServerGauges& s) const {
  std::string out;
  out.reserve(32 * 1024);
  Counter(out, "tgi_request_count", "Requests received", static_cast<double>(requests_.load()));
  Counter(out, "tgi_request_success", "Requests that completed",
          static_cast<double>(successes_.load()));
  out += "# HELP tgi_request_failure Requests that failed, by reason\n";
  out += "# TYPE tgi_request_failure counter\n";
  {
    std::lock_guard<std::mutex> lock(failures_mu_);
    for (const auto& [reason, n] : failures_) {
      out += "tgi_request_failure{err=\"" + reason + "\"} " + std::to_string(n) + "\n";
    }
  }
  Gauge(out, "tgi_queue_size", "Requests waiting in the engine queue",
        static_cast<double>(e.queued));
  Gauge(out, "tgi_batch_current_size", "Sequences in the running batch",
        static_cast<double>(e.running));
  Gauge(out, "tgi_batch_max_total_tokens", "KV token budget of a batch",
        static_cast<double>(s.max_batch_total_tokens));
  duration_.Render(out, "tgi_request_duration", "End-to-end request duration (s)");
  validation_.Render(out, "tgi_request_validation_duration",
                     "Parsing, templating and tokenization (s)");
  queue_.Render(out, "tgi_request_queue_duration", "Submission to first scheduled step (s)");
  inference_.Render(out, "tgi_request_inference_duration",
                    "First scheduled step to last token (s)");
  time_per_token_.Render(out, "tgi_request_mean_time_per_token_duration",
                         "Inference time per generated token (s)");
  input_length_.Render(out, "tgi_request_input_length", "Prompt tokens per request");
  generated_tokens_.Render(out, "tgi_request_generated_tokens", "Generated tokens per request");
  max_new_tokens_.Render(out, "tgi_request_max_new_tokens", "max_new_tokens per request");
  skipped_tokens_.Render(out, "tgi_request_skipped_tokens",
                         "Generated tokens per request that came from accepted speculative drafts");
  ttft_.Render(out, "kiln_time_to_first_token_seconds", "Arrival to first token (s)");
  itl_.Render(out, "kiln_inter_token_latency_seconds", "Time between consecutive tokens (s)");
  queue_.Render(out, "kiln_request_queue_time_seconds", "Submission to first scheduled step (s)");
  Gauge(out, "kiln_requests_running", "Sequences the engine is running",
        static_cast<double>(e.running));
  Gauge(out, "kiln_requests_waiting", "Requests in the engine queue",
        static_cast<double>(e.queued));
  Gauge(out, "kiln_requests_in_flight", "Admitted requests (running, queued or streaming)",
        static_cast<double>(s.in_flight));
  Gauge(out, "kiln_admission_capacity", "Requests admitted at most before 429",
        static_cast<double>(s.admission_capacity));
  Gauge(out, "kiln_kv_cache_blocks_total", "KV-cache blocks in the pool",
        static_cast<double>(e.kv_blocks_total));
  Gauge(out, "kiln_kv_cache_blocks_used", "KV-cache blocks in use",
        static_cast<double>(e.kv_blocks_used));
  Gauge(out, "kiln_kv_cache_usage_ratio", "Fraction of KV-cache blocks in use",
        e.kv_blocks_total > 0
            ? static_cast<double>(e.kv_blocks_used) / static_cast<double>(e.kv_blocks_total)
            : 0.0);
  Counter(out, "kiln_prefix_cache_hits_total", "KV blocks reused from the prefix cache",
          static_cast<double>(e.prefix_cache_hits));
  Counter(out, "kiln_preemptions_total", "Sequences preempted for lack of KV blocks",
          static_cast<double>(e.preemptions));
  Counter(out, "kiln_engine_steps_total", "Engine steps (forward passes)",
          static_cast<double>(e.steps));
  Counter(out, "kiln_generated_tokens_total", "Tokens generated",
          static_cast<double>(e.generated_tokens));
  Gauge(out, "kiln_generation_tokens_per_second", "Generated tokens per second, recent window",
        e.tokens_per_second);
  RenderSpeculation(out, e);
  Gauge(out, "kiln_http_connections", "Open HTTP connections", static_cast<double>(s.connections));
  Gauge(out, "kiln_draining", "1 while the server drains before exit", s.draining ? 1.0 : 0.0);
  return out;
}

}  // namespace kiln
