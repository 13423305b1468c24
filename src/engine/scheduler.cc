#include "engine/scheduler.h"

#include <algorithm>

namespace kiln {
namespace {

int64_t Remaining(const Sequence& s) {
  return static_cast<int64_t>(s.tokens.size()) - s.num_computed;
}

}  // namespace

void StepPlan::Clear() {
  chunks.clear();
  preempted.clear();
  unfittable.clear();
  num_tokens = 0;
}

Scheduler::Scheduler(const SchedulerConfig& config, KvCacheManager& kv)
    : config_(config), kv_(kv) {}

void Scheduler::Schedule(std::vector<Sequence*>& running, std::deque<Sequence*>& waiting,
                         StepPlan& plan) {
  plan.Clear();
  int64_t budget = config_.max_batch_tokens;
  for (size_t i = 0; i < running.size() && budget > 0; ++i) {
    Sequence& s = *running[i];
    const int64_t n = std::min(Remaining(s), budget);
    if (!ReserveOrPreempt(s, n, running, waiting, plan)) break;  // s was the last one
    plan.chunks.push_back({&s, n});
    budget -= n;
  }
  // After a preemption the pool is short: admitting newcomers would only thrash.
  if (plan.preempted.empty() && plan.unfittable.empty()) {
    AdmitWaiting(budget, running, waiting, plan);
  }
  AttachDrafts(budget, plan);
  plan.num_tokens = config_.max_batch_tokens - budget;
}

bool Scheduler::ReserveOrPreempt(Sequence& s, int64_t n, std::vector<Sequence*>& running,
                                 std::deque<Sequence*>& waiting, StepPlan& plan) {
  while (!kv_.Reserve(s.blocks, s.num_computed + n)) {
    Sequence* victim = running.back();  // most recently admitted; never one already scheduled
    running.pop_back();
    kv_.Release(victim->blocks);
    victim->num_computed = 0;
    victim->draft_computed = 0;
    if (victim == &s && running.empty()) {
      plan.unfittable.push_back(victim);
      return false;
    }
    victim->state = SequenceState::kWaiting;
    waiting.push_front(victim);
    plan.preempted.push_back(victim);
    if (victim == &s) return false;
  }
  return true;
}

void Scheduler::AttachDrafts(int64_t& budget, StepPlan& plan) {
  for (ScheduledChunk& c : plan.chunks) {
    Sequence& s = *c.seq;
    const int64_t d = std::min(static_cast<int64_t>(s.draft.size()), budget);
    if (d <= 0 || c.num_tokens != Remaining(s) ||
        !kv_.Reserve(s.blocks, s.num_computed + c.num_tokens + d)) {
      s.draft.clear();
      continue;
    }
    s.draft.resize(d);
    c.num_draft = d;
    budget -= d;
  }
}

void Scheduler::AdmitWaiting(int64_t& budget, std::vector<Sequence*>& running,
                             std::deque<Sequence*>& waiting, StepPlan& plan) {
  while (budget > 0 && !waiting.empty() &&
         static_cast<int64_t>(running.size()) < config_.max_batch_size) {
    Sequence& s = *waiting.front();
    if (!Admissible(s)) break;
    const std::optional<int64_t> cached = kv_.Admit(s.tokens, budget, s.blocks);
    if (!cached) break;
    s.num_computed = *cached;
    const int64_t n = std::min(Remaining(s), budget);
    waiting.pop_front();
    s.draft.clear();  // proposed before a preemption: its positions are recomputed first
    s.state = SequenceState::kRunning;
    if (s.first_scheduled == std::chrono::steady_clock::time_point()) {
      s.first_scheduled = std::chrono::steady_clock::now();
    }
    running.push_back(&s);
    plan.chunks.push_back({&s, n});
    budget -= n;
  }
}

bool Scheduler::Admissible(const Sequence& s) const {
  if (!config_.prefix_caching || s.choice == 0 || s.prompt_len <= kv_.block_size()) return true;
  const Sequence& first = *s.request.choices[0];
  return !(first.state == SequenceState::kRunning && first.num_computed < first.prompt_len);
}

}  // namespace kiln
