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
// Cost control (AllotDrafts): proposals are trimmed each step to the drafted tokens that pay on
// this hardware. Each sequence has an estimated per-token acceptance a (SpeculationState), so
// its j-th drafted token is expected to add a^j tokens; the step's time at each size comes from
// StepCost, measured as the engine runs. Drafted tokens are taken in order of expected gain and
// the count that maximizes expected tokens per second of the step is kept. While a step is bound
// by reading weights extra rows are nearly free and drafts ride along; once the batch makes it
// compute-bound a row costs about what it yields without speculation and drafts stop, so
// speculation backs off as the batch grows without a batch-size threshold.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <vector>

#include "engine/ngram_proposer.h"
#include "engine/step_cost.h"

namespace kiln {

struct SpeculationConfig {
  int32_t max_draft = 0;  // tokens proposed per sequence and step (TGI's --speculate); 0: off
  NgramConfig ngram;
  // A hard cap on a step with drafts (decodes, prefill chunks and drafts together).
  int32_t max_step_tokens = 64;
  // Verify every proposal up to the cap instead of trimming them by cost (tests, measurements).
  bool all_drafts = false;
  // Tests: seconds a step (a draft model's forward) of so many tokens is taken to cost, in
  // place of the measured time, so the policy's decisions do not depend on the machine's load.
  std::function<double(int64_t tokens)> step_seconds, draft_step_seconds;
};

// One sequence's estimated per-token acceptance: a moving average of its verified drafts' ratios
// (a draft of d with a accepted counts as a successes and, when a < d, one failure: a / (a + 1)
// or 1). This weighs a fully accepted long draft like a short one, so it reads lower than the
// geometric model's estimate (successes over trials): deliberately, since the step costs it is
// weighed against lag behind (a size the policy stops visiting keeps its old average). With
// the count-ratio estimate, a draft model on sampled text fell to 0.89x; with this, 0.99x.
// A sequence whose drafts keep failing soon gets none allotted; while it gets none its estimate
// drifts back to the prior, so it is tried again now and then (text that starts repeating is
// found again).
struct SpeculationState {
  static constexpr double kPrior = 0.5;
  double acceptance = kPrior;
  int64_t drafted = 0;
  int64_t accepted = 0;  // counted by the verifier as each drafted token is kept

  void Record(int32_t num_drafted, int32_t num_accepted);
  void Idle();  // a decode step without a draft
};

struct DraftCandidate {
  double acceptance = 0.0;  // SpeculationState::acceptance
  int32_t proposed = 0;     // tokens the proposer offers
  int32_t allotted = 0;     // out: how many of them to verify
};

// Sets each candidate's `allotted` (a prefix of its proposal) to maximize the step's expected
// tokens per second: base_tokens is what the step holds without drafts, base_yield the tokens it
// emits without them (its decodes), at most max_tokens in all. round_seconds: what drafting
// costs per token of the longest draft (a draft model's batched single-token round; 0 for
// n-gram lookup). With no cost measured yet every proposal is kept (up to max_tokens), so the
// first steps measure what drafts cost.
void AllotDrafts(std::vector<DraftCandidate>& candidates, int64_t base_tokens, double base_yield,
                 int64_t max_tokens, const StepCost& cost, double round_seconds = 0.0);

// Engine-wide totals (/metrics): llama.cpp's spec_decode counters and a histogram of the
// fraction of each verified draft that was accepted.
struct SpeculationCounters {
  static constexpr std::array<double, 5> kRateBounds = {0.0, 0.25, 0.5, 0.75, 1.0};
  int64_t drafts = 0;                                 // drafts verified
  int64_t draft_tokens = 0;                           // tokens in them
  int64_t accepted_tokens = 0;                        // drafted tokens kept
  std::array<int64_t, kRateBounds.size()> by_rate{};  // drafts with rate <= bound (not cumulative)
  double rate_sum = 0.0;
  void Record(int32_t num_drafted, int32_t num_accepted);
};

}  // namespace kiln
