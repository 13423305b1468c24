// Speculative decoding in the engine's step: a decoding sequence may carry a draft of k proposed
// tokens; the step feeds its last sampled token and the draft in one go (k + 1 positions, the
// logits of all of them), and the outputs are verified left to right: the token sampled at
// position i is kept, and while it equals draft[i] the next position's logits are valid too.
// So one forward yields 1 .. k + 1 tokens.
//
// Exactness: every kept token is sampled from the same logits, by the same Sampler, with the
// same Philox counter (one draw per kept token) as without speculation; a draft only decides how
// many of those draws one forward can make. With a deterministic proposer (n-gram) that is the
// rejection-sampling rule itself: draft x is accepted with probability p(x), and on rejection the
// token is drawn from p restricted to y != x. Greedy and seeded outputs are therefore identical
// token for token to decoding without speculation (up to the kernels' row-independence, which
// tests check on real models). Rejected positions' KV rows are left beyond num_computed (never
// read, overwritten next step, never registered in the prefix cache); blocks past the kept
// positions go back to the pool.
//
// Cost control: k adapts per sequence (SpeculationState), and a step spends at most
// max_step_tokens on drafts and decodes together, so speculation backs off as the batch grows
// and stops once decodes alone fill it (matmuls there are no longer bound by reading weights).
#pragma once

#include <array>
#include <cstdint>

#include "engine/ngram_proposer.h"

namespace kiln {

struct SpeculationConfig {
  int32_t max_draft = 0;  // tokens proposed per sequence and step (TGI's --speculate); 0: off
  NgramConfig ngram;
  // Drafted plus decoding tokens in one step beyond which no more drafts are added: past a few
  // rows a step stops being bound by reading the weights and each extra row costs compute
  // (SmolLM2-135M Q4_1, Zen 4, 1 core: 4.7 ms at 1 row, 5.4 ms at 4, 7.6 at 5, 10.3 at 8).
  int32_t max_step_tokens = 8;
};

// One sequence's adaptive draft length: doubles (up to max_draft) after a fully accepted draft,
// falls to accepted + 1 after a rejection, so a sequence that stops repeating soon drafts one
// token at a time, and one that copies quickly returns to full drafts.
struct SpeculationState {
  int32_t next_k = 0;  // 0: not started (max_draft)
  int64_t drafted = 0;
  int64_t accepted = 0;  // counted by the verifier as each drafted token is kept

  int32_t K(int32_t max_draft) const { return next_k == 0 ? max_draft : next_k; }
  // After a verification: counts the draft and sets the next length.
  void Record(int32_t max_draft, int32_t num_drafted, int32_t num_accepted);
};

// Engine-wide totals (/metrics): llama.cpp's spec_decode counters and a histogram of the
// fraction of each verified draft that was accepted.
struct SpeculationCounters {
  static constexpr std::array<double, 5> kRateBounds = {0.0, 0.25, 0.5, 0.75, 1.0};
  int64_t drafts = 0;           // drafts verified
  int64_t draft_tokens = 0;     // tokens in them
  int64_t accepted_tokens = 0;  // drafted tokens kept
  std::array<int64_t, kRateBounds.size()> by_rate{};  // drafts with rate <= bound (not cumulative)
  double rate_sum = 0.0;
  void Record(int32_t num_drafted, int32_t num_accepted);
};

}  // namespace kiln
