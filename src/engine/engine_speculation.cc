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
    const int64_t remaining = static_cast<int64_t>(s->tokens.size()) - s->num_computed;
    base_tokens += remaining;
    if (remaining != 1 || s->generated == 0) continue;
    ++decodes;
    // Kept tokens this step are at most 1 + draft: never past max_new_tokens or the context.
    const int64_t room =
        std::min<int64_t>(s->stop.TokensLeft(s->generated) - 1,
                          limits_.max_context - 1 - static_cast<int64_t>(s->tokens.size()));
    const int64_t k = std::min<int64_t>(room, c.max_draft);
    if (k > 0) ProposeNgram(s->tokens, static_cast<int32_t>(k), c.ngram, s->draft);
    if (s->draft.empty()) continue;
    drafting_.push_back(s);
    candidates_.push_back({s->speculation.acceptance, static_cast<int32_t>(s->draft.size()), 0});
  }
  if (candidates_.empty()) return;
  AllotDrafts(candidates_, base_tokens, static_cast<double>(decodes), c.max_step_tokens,
              c.all_drafts ? StepCost() : step_cost_);
  for (size_t i = 0; i < drafting_.size(); ++i) {
    Sequence& s = *drafting_[i];
    s.draft.resize(candidates_[i].allotted);
    if (s.draft.empty()) s.speculation.Idle();
  }
}

void Engine::Impl::VerifyDraft(Sequence& s, int64_t num_draft, float* logits) {
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
  s.draft.clear();
}

}  // namespace kiln
