// Speculation in the step (speculation.h): drafts are proposed before scheduling and verified
// from the step's logits, one row per fed position.
#include <algorithm>

#include "engine/engine_impl.h"

namespace kiln {

void Engine::Impl::ProposeDrafts() {
  const SpeculationConfig& c = config_.speculation;
  if (c.max_draft <= 0) return;
  // What the step holds without drafts: every decode's token and the prefills' chunks.
  int64_t base_tokens = 0, decodes = 0;
  drafting_.clear();
  candidates_.clear();
  for (Sequence* s : running_) {
    s->draft.clear();
    s->draft_fed = 0;
    const int64_t remaining = static_cast<int64_t>(s->tokens.size()) - s->num_computed;
    base_tokens += remaining;
    if (remaining != 1 || s->generated == 0) continue;
    ++decodes;
    // Kept tokens this step are at most 1 + draft: never past max_new_tokens or the context.
    const int64_t room =
        std::min<int64_t>(s->stop.TokensLeft(s->generated) - 1,
                          limits_.max_context - 1 - static_cast<int64_t>(s->tokens.size()));
    const int64_t k = std::min<int64_t>(room, c.max_draft);
    if (k <= 0) continue;
    drafting_.push_back(s);
    candidates_.push_back({s->speculation.acceptance, static_cast<int32_t>(k), 0});
  }
  if (candidates_.empty()) return;
  const StepCost& cost = c.all_drafts ? StepCost() : step_cost_;
  if (draft_ != nullptr) {
    // A draft model's tokens cost forwards of their own: only what can pay is drafted.
    // A drafting round is one single-token forward of the draft over the drafting sequences.
    const double round = draft_cost_.Estimate(static_cast<int64_t>(candidates_.size()));
    AllotDrafts(candidates_, base_tokens, static_cast<double>(decodes), c.max_step_tokens, cost,
                c.all_drafts ? 0.0 : round);
    ProposeWithDraftModel();
  } else {
    for (size_t i = 0; i < drafting_.size(); ++i) {
      ProposeNgram(drafting_[i]->tokens, candidates_[i].proposed, c.ngram, drafting_[i]->draft);
      candidates_[i].proposed = static_cast<int32_t>(drafting_[i]->draft.size());
    }
  }
  AllotDrafts(candidates_, base_tokens, static_cast<double>(decodes), c.max_step_tokens, cost);
  for (size_t i = 0; i < drafting_.size(); ++i) {
    Sequence& s = *drafting_[i];
    s.draft.resize(std::min<size_t>(s.draft.size(), candidates_[i].allotted));
    if (s.draft.empty()) s.speculation.Idle();
  }
}

// Drafts of candidates_[i].allotted tokens from the draft model, for the candidates that have
// any. The KV blocks for the drafted positions are reserved first, before the scheduler runs,
// so only from what the step's own sequences and the queue's head cannot need: a draft must
// never cost anyone a block (no block, no draft).
void Engine::Impl::ProposeWithDraftModel() {
  int64_t spare = kv_.num_free_blocks();
  for (const Sequence* s : running_) {
    spare -= std::max<int64_t>(0, kv_.BlocksFor(static_cast<int64_t>(s->tokens.size()) + 1) -
                                      static_cast<int64_t>(s->blocks.blocks.size()));
  }
  if (!waiting_.empty()) {
    spare -= kv_.BlocksFor(static_cast<int64_t>(waiting_.front()->tokens.size()) + 1);
  }
  draft_jobs_.clear();
  for (size_t i = 0; i < drafting_.size(); ++i) {
    Sequence& s = *drafting_[i];
    DraftCandidate& c = candidates_[i];
    const int64_t size = static_cast<int64_t>(s.tokens.size());
    // Blocks this draft adds beyond the one the decode itself may need (counted above).
    const int64_t extra = kv_.BlocksFor(size + c.allotted) - kv_.BlocksFor(size + 1);
    if (c.allotted == 0 || extra > spare || !kv_.Reserve(s.blocks, size + c.allotted)) {
      c.proposed = 0;
      continue;
    }
    spare -= extra;
    DraftJob& job = draft_jobs_.emplace_back();
    job.tokens = s.tokens;
    job.blocks = s.blocks.blocks;
    job.computed = &s.draft_computed;
    job.k = c.allotted;
    job.draft = &s.draft;
  }
  if (!draft_jobs_.empty()) draft_->Propose(draft_jobs_, draft_cost_);
  for (size_t i = 0; i < drafting_.size(); ++i) {
    Sequence& s = *drafting_[i];
    // The draft model was fed every proposed token but the last.
    s.draft_fed = std::max<int64_t>(0, static_cast<int64_t>(s.draft.size()) - 1);
    candidates_[i].proposed = static_cast<int32_t>(s.draft.size());
  }
}

void Engine::Impl::VerifyDraft(Sequence& s, int64_t num_draft, float* logits) {
  const int64_t fed_from = s.num_computed;  // where the draft tokens were fed
  kv_.Commit(s.blocks, s.tokens, s.num_computed);
  int32_t accepted = 0;
  for (int64_t j = 0; j <= num_draft; ++j) {
    EmitToken(s, logits + j * vocab_);
    if (s.state != SequenceState::kRunning) break;  // finished: its blocks are released
    if (j == num_draft || s.tokens.back() != s.draft[j]) break;
    // draft[j] was fed at this position and is the token kept there: its KV row stands.
    ++s.num_computed;
    ++accepted;
    ++s.speculation.accepted;
    kv_.Commit(s.blocks, s.tokens, s.num_computed);
  }
  const int32_t drafted = static_cast<int32_t>(num_draft);
  s.speculation.Record(drafted, accepted);
  speculation_.Record(drafted, accepted);
  if (s.state == SequenceState::kRunning) {
    kv_.Truncate(s.blocks, static_cast<int64_t>(s.tokens.size()));
  }
  // The draft model's rows of accepted tokens it was fed stand too.
  if (s.draft_computed == fed_from) s.draft_computed += std::min<int64_t>(accepted, s.draft_fed);
  s.draft.clear();
}

}  // namespace kiln
