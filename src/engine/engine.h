// The engine: one thread per model that turns many concurrent requests into few, full forward
// passes (continuous batching over a paged KV cache, chunked prefill, preemption by recompute).
// Other threads talk to it only through Submit/Cancel/Stats; events come back through sinks.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "engine/model_runner.h"
#include "engine/request.h"
#include "engine/speculation.h"

namespace kiln {

class Tokenizer;

struct EngineConfig {
  int32_t max_batch_size = 64;              // running sequences
  int32_t max_batch_prefill_tokens = 4096;  // token budget of one step
  int32_t max_queue = 1024;                 // waiting requests before Submit refuses
  bool prefix_caching = true;
  SpeculationConfig speculation;  // off unless max_draft > 0
};

// Receives a request's events on the engine thread. Must not block: queue and return.
// Returning false means "the client is gone": the engine cancels the request.
using EventSink = std::function<bool(GenerationEvent&&)>;

struct EngineStats {
  int64_t queued = 0;
  int64_t running = 0;
  int64_t kv_blocks_total = 0;
  int64_t kv_blocks_used = 0;
  int64_t kv_blocks_cached = 0;   // unreferenced blocks kept for prefix reuse
  int64_t prefix_cache_hits = 0;  // blocks reused
  int64_t preemptions = 0;
  int64_t steps = 0;
  int64_t generated_tokens = 0;
  double tokens_per_second = 0.0;  // generated, recent window
  int64_t prompt_tokens = 0;       // prompt tokens of the requests received
  int32_t speculate = 0;           // SpeculationConfig::max_draft
  SpeculationCounters speculation;
  // The compute pool's cores and each one's worker CPU seconds (read when Stats() is called).
  std::vector<int> cores;
  std::vector<double> core_cpu_seconds;
};

class Engine {
 public:
  using RequestId = uint64_t;

  // `tokenizer` may be null (events then carry empty text, stop sequences are unsupported).
  // `draft`: a speculative draft model's runner (MakeDraftRunner) with the same vocabulary;
  // with it, config.speculation's drafts come from that model instead of n-gram lookup.
  Engine(std::unique_ptr<ModelRunner> runner, const Tokenizer* tokenizer, EngineConfig config,
         std::unique_ptr<ModelRunner> draft = nullptr);
  ~Engine();  // stops the engine thread; pending requests end with FinishReason::kCancelled
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // Thread-safe. Throws kiln::Error when the request can never fit (prompt + max_new_tokens
  // larger than the KV pool or the context) or the queue is full.
  RequestId Submit(GenerationRequest request, EventSink sink);
  // Thread-safe; frees the request's KV blocks within one engine step, in any state.
  void Cancel(RequestId id);
  EngineStats Stats() const;

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace kiln
