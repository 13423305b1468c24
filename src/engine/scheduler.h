// The step scheduler: decides which sequences run in the next forward pass and with how many
// tokens each (vLLM v1's "schedule tokens, not phases").
//
// Policy, per step, under a budget of max_batch_tokens tokens:
//  1. Running sequences, oldest admission first: a decode takes 1 token, a sequence still
//     prefilling takes its next chunk (as much of its remaining prompt as the budget allows).
//     KV blocks are reserved lazily for exactly the positions of this step. When the pool is
//     out of blocks, the most recently admitted running sequence is preempted (blocks freed,
//     back to the FRONT of the waiting queue to recompute prompt + generated tokens later; its
//     full blocks usually survive in the prefix cache) until the reservation fits. A sequence
//     that does not fit even alone is returned as unfittable (Submit's limits prevent this).
//  2. If nothing was preempted, waiting sequences in FIFO order while budget, max_batch_size
//     and KV blocks allow, each with its first chunk and any cached prefix. Strict FIFO: when
//     the head cannot be admitted nobody behind it is, so no request starves.
//  3. Decodes' drafts (speculation.h) from the budget and free blocks left after 1 and 2: a
//     draft never preempts or delays anyone, it is cut or dropped instead.
//  Choices 1..n-1 of a request wait while choice 0 prefills the shared prompt, then take its
//  full blocks from the prefix cache instead of recomputing them.
#pragma once

#include <cstdint>
#include <deque>
#include <vector>

#include "engine/sequence.h"
#include "kv/kv_cache_manager.h"

namespace kiln {

struct SchedulerConfig {
  int32_t max_batch_size = 64;      // running sequences
  int64_t max_batch_tokens = 4096;  // tokens per step (TGI's max_batch_prefill_tokens)
  bool prefix_caching = true;
};

struct ScheduledChunk {
  Sequence* seq = nullptr;
  int64_t num_tokens = 0;  // tokens[num_computed, + num_tokens) go into this step
  int64_t num_draft = 0;   // then seq->draft[0, num_draft): positions to verify (decodes only)
};

struct StepPlan {
  std::vector<ScheduledChunk> chunks;  // batch order
  std::vector<Sequence*> preempted;    // now at the front of the waiting queue
  std::vector<Sequence*> unfittable;   // removed from running, blocks freed: fail them
  int64_t num_tokens = 0;              // including drafts
  void Clear();
};

class Scheduler {
 public:
  Scheduler(const SchedulerConfig& config, KvCacheManager& kv);

  // `running` is in admission order; both lists are updated (admissions, preemptions).
  void Schedule(std::vector<Sequence*>& running, std::deque<Sequence*>& waiting, StepPlan& plan);

 private:
  // Reserves blocks for `n` more tokens of `s`, preempting from the back of `running`. False
  // when `s` itself had to go.
  bool ReserveOrPreempt(Sequence& s, int64_t n, std::vector<Sequence*>& running,
                        std::deque<Sequence*>& waiting, StepPlan& plan);
  // Last, from what is left of the budget and the free blocks: each scheduled decode's draft
  // (or as much of it as fits), so that drafts never cost anyone a place or a block.
  void AttachDrafts(int64_t& budget, StepPlan& plan);
  void AdmitWaiting(int64_t& budget, std::vector<Sequence*>& running,
                    std::deque<Sequence*>& waiting, StepPlan& plan);
  bool Admissible(const Sequence& s) const;

  SchedulerConfig config_;
  KvCacheManager& kv_;
};

}  // namespace kiln
