// Speculation in the step (speculation.h): drafts are proposed before scheduling and verified
// from the step's logits, one row per fed position.
#include <algorithm>

#include "engine/engine_impl.h"

namespace kiln {

void Engine::Impl::ProposeDrafts() {
  const SpeculationConfig& c = config_.speculation;
  if (c.max_draft <= 0) return;
  // What the step spends without drafts: every decode's token and the prefills' chunks.
  int64_t spare = c.max_step_tokens;
  for (const Sequence* s : running_) {
    spare -= static_cast<int64_t>(s->tokens.size()) - s->num_computed;
  }
  for (Sequence* s : running_) {
    s->draft.clear();
    const int64_t remaining = static_cast<int64_t>(s->tokens.size()) - s->num_computed;
    if (spare <= 0 || remaining != 1 || s->generated == 0) continue;
    // Kept tokens this step are at most 1 + draft: never past max_new_tokens or the context.
    const int64_t room = std::min<int64_t>(s->stop.TokensLeft(s->generated) - 1,
                                           limits_.max_context - 1 -
                                               static_cast<int64_t>(s->tokens.size()));
    const int64_t k = std::min({spare, room, static_cast<int64_t>(s->speculation.K(c.max_draft))});
    if (k <= 0) continue;
    ProposeNgram(s->tokens, static_cast<int32_t>(k), c.ngram, s->draft);
    spare -= static_cast<int64_t>(s->draft.size());
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
  s.speculation.Record(config_.speculation.max_draft, drafted, accepted);
  speculation_.Record(drafted, accepted);
  if (s.state == SequenceState::kRunning) {
    kv_.Truncate(s.blocks, static_cast<int64_t>(s.tokens.size()));
  }
  s.draft.clear();
}

}  // namespace kiln
