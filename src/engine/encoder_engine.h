// The engine of an encoder model (embeddings, reranking, classification, extractive QA): one
// thread that packs whatever requests are waiting into one padding-free forward pass, up to a
// token budget (dynamic batching as TEI does it: no waiting for a batch to fill), and hands
// each request its result. Other threads talk to it only through Submit/Stats.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <shared_mutex>
#include <string>
#include <vector>

#include "model/encoder_model.h"
#include "util/thread_pool.h"

namespace kiln {

struct EncoderEngineConfig {
  int64_t max_batch_tokens = 16384;  // tokens of one forward pass (one request may be alone)
  int64_t max_batch_requests = 256;  // sequences of one forward pass
  int64_t max_queue = 4096;          // waiting requests before Submit refuses
};

enum class EncoderTask {
  kEmbed,     // one pooled vector [D]
  kClassify,  // label logits [L] (sequence-classification head)
  kSpans,     // start/end logits per token [n, 2] (question-answering head)
  kTokens,    // every token's hidden state [n, D]
};

struct EncoderRequest {
  std::vector<int32_t> tokens;    // with the special tokens, as the model reads them
  std::vector<int32_t> type_ids;  // empty: all 0
  EncoderTask task = EncoderTask::kEmbed;
  Pooling pooling = Pooling::kCls;  // kEmbed
  // Set by the caller when nobody wants the result any more (a client gone): the engine then
  // skips the request if it has not run yet.
  std::shared_ptr<std::atomic<bool>> cancelled;
};

struct EncoderResult {
  std::vector<float> values;  // see EncoderTask
  std::string error;          // non-empty: the request failed (values empty)
  double queue_seconds = 0, compute_seconds = 0;
  int64_t batch_size = 0;  // sequences in the forward pass that ran it
};

// Called once per request on the engine thread (or on the destructor's thread for requests
// still queued at shutdown, with an error). Must not block.
using EncoderCallback = std::function<void(EncoderResult&&)>;

struct EncoderEngineStats {
  int64_t queued = 0;
  int64_t running = 0;   // sequences of the forward pass in progress
  int64_t batches = 0;   // forward passes run
  int64_t requests = 0;  // sequences run
  int64_t tokens = 0;    // tokens run
  std::vector<int> cores;
  std::vector<double> core_cpu_seconds;
};

class EncoderEngine {
 public:
  EncoderEngine(std::unique_ptr<EncoderModel> model, std::shared_ptr<ThreadPool> pool,
                EncoderEngineConfig config);
  ~EncoderEngine();
  EncoderEngine(const EncoderEngine&) = delete;
  EncoderEngine& operator=(const EncoderEngine&) = delete;

  const EncoderConfig& model_config() const { return config_; }
  const EncoderEngineConfig& config() const { return engine_config_; }
  // Thread-safe. kiln::Error when the request is malformed (no tokens, more than the model's
  // max_input_tokens, a task the model has no head for) or the queue is full.
  void Submit(EncoderRequest request, EncoderCallback done);
  EncoderEngineStats Stats() const;
  // Stops the engine thread and frees the model (an unloaded model): queued requests get an
  // error, Submit refuses from now on. Thread-safe; the object itself stays valid.
  void Shutdown();

 private:
  class Impl;
  const EncoderConfig config_;
  const EncoderEngineConfig engine_config_;
  mutable std::shared_mutex mu_;  // guards impl_ against Shutdown
  std::unique_ptr<Impl> impl_;
};

}  // namespace kiln
