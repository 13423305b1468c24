// Engine::Impl: the engine thread and everything it owns. Other threads touch only the members
// under mu_ (the inbox of submissions and cancellations, and the published stats).
//
// One loop iteration: take the inbox -> add requests, apply cancellations -> Step (schedule,
// build the ragged Batch, forward, sample, emit events) -> drop finished sequences -> publish
// stats. The thread sleeps only when nothing is queued or running.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <random>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <vector>

#include "engine/draft_model.h"
#include "engine/engine.h"
#include "engine/scheduler.h"
#include "engine/sequence.h"
#include "engine/throughput_window.h"
#include "engine/validate.h"
#include "kv/kv_cache_manager.h"
#include "model/batch.h"
#include "sampling/sampler.h"

namespace kiln {

class Engine::Impl {
 public:
  Impl(std::unique_ptr<ModelRunner> runner, const Tokenizer* tokenizer, EngineConfig config,
       std::unique_ptr<ModelRunner> draft);
  ~Impl();

  RequestId Submit(GenerationRequest request, EventSink sink);
  void Cancel(RequestId id);
  EngineStats Stats() const;

 private:
  struct Incoming {
    RequestId id;
    GenerationRequest request;
    EventSink sink;
  };

  // engine.cc: the loop and the inbox.
  void Loop();
  bool HasWork() const { return !running_.empty() || !waiting_.empty(); }
  void AddRequest(Incoming& in);
  void CancelRequest(RequestId id);
  void CancelEverything(std::deque<Incoming>& unstarted);
  void PublishStats();

  // engine_step.cc: one forward pass.
  void Step();
  void BuildBatch();
  bool RunForward();
  void ProcessOutputs();
  void Reap();

  // engine_speculation.cc: drafts before the step, their verification after it.
  void ProposeDrafts();
  void ProposeWithDraftModel();
  void VerifyDraft(Sequence& s, int64_t num_draft, float* logits);

  // engine_output.cc: tokens -> events.
  void EmitToken(Sequence& s, float* logits);
  void FillTopTokens(GenerationEvent& ev) const;  // from top_
  std::optional<FinishReason> TakeText(Sequence& s, int32_t token, std::string& text);
  bool FlushText(Sequence& s, std::string& text);
  GenerationEvent BaseEvent(const Sequence& s) const;
  void MarkFinished(Sequence& s);
  void Finish(Sequence& s, FinishReason reason, std::string_view error = {});
  void Send(RequestState& r, GenerationEvent&& event);

  const std::unique_ptr<ModelRunner> runner_;
  const Tokenizer* const tokenizer_;
  const EngineConfig config_;
  const int64_t vocab_;
  RequestLimits limits_;
  std::vector<int32_t> eos_ids_;

  // Shared with other threads, under mu_.
  mutable std::mutex mu_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::deque<Incoming> inbox_;
  std::vector<RequestId> cancels_;
  RequestId next_id_ = 1;
  int64_t prompt_tokens_ = 0;
  EngineStats stats_;

  // Engine thread only.
  KvCacheManager kv_;
  Scheduler scheduler_;
  StepPlan plan_;
  Batch batch_;
  std::vector<std::vector<int32_t>> spare_tables_;  // block_table buffers of shrunk batches
  std::vector<float> logits_;                       // [sequences with want_logits, vocab]
  SamplingWorkspace workspace_;
  std::vector<TokenLogprob> top_;
  std::unordered_map<RequestId, std::unique_ptr<RequestState>> requests_;
  std::vector<RequestId> done_;     // requests whose last choice finished this iteration
  std::vector<Sequence*> running_;  // admission order
  std::deque<Sequence*> waiting_;   // FIFO; preempted sequences re-enter at the front
  std::mt19937_64 seed_source_;
  ThroughputWindow throughput_;
  int64_t steps_ = 0, preemptions_ = 0, generated_ = 0;
  SpeculationCounters speculation_;
  StepCost step_cost_;                      // forward seconds by step size
  std::vector<Sequence*> drafting_;         // ProposeDrafts' scratch
  std::vector<DraftCandidate> candidates_;  // one per drafting_ entry
  std::unique_ptr<DraftModel> draft_;       // null: n-gram drafts
  std::vector<DraftJob> draft_jobs_;
  StepCost draft_cost_;  // the draft model's forward seconds by size

  std::thread thread_;  // last: starts once everything above exists
};

}  // namespace kiln
