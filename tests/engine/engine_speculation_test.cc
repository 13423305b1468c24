// Speculative decoding in the engine (n-gram drafts): outputs identical to decoding without it,
// greedy and seeded sampling, alone and in a batch, under KV pressure; fewer steps when the model
// repeats itself; limits and stop rules exact; no blocks leaked; no drafts in large batches.
#include <gtest/gtest.h>

#include <vector>

#include "engine/engine.h"
#include "engine/engine_test_util.h"
#include "util/error.h"

namespace kiln::testing {
namespace {

using T = FakeTokenizer;

// A model that mostly copies: the token 5 positions back, except where the history hashes to a
// multiple of 7, where the fake's own pseudo-random peak decides. So n-gram drafts are often, but
// not always, right.
int32_t CopyingPeak(std::span<const int32_t> history) {
  uint64_t h = 1469598103934665603ull;
  for (int32_t t : history) h = MixHash(h, static_cast<uint32_t>(t));
  if (history.size() < 5 || h % 7 == 0) return static_cast<int32_t>(h % 64);
  return history[history.size() - 5];
}

GenerationRequest Request(int32_t first, int32_t max_new, bool sample = false) {
  GenerationRequest r;
  r.prompt = {first, 11, 12, 13, 14, 15, first, 11};
  r.stop.max_new_tokens = max_new;
  r.stop.ignore_eos = true;
  r.sampling.do_sample = sample;
  r.sampling.seed = 1234 + static_cast<uint64_t>(first);
  r.logprobs = true;
  r.top_n_tokens = 2;
  return r;
}

EngineConfig Speculating(int32_t k) {
  EngineConfig c;
  c.speculation.max_draft = k;
  return c;
}

struct Outcome {
  std::vector<std::vector<ChoiceOutput>> outputs;  // per request
  EngineStats stats;
};

// Submits every request at once (gated: they meet in the first step) and waits for all.
// Steps are taken to cost 1 ms whatever their size (bound by reading weights), or with `linear`
// 1 ms per token (bound by arithmetic: drafts never pay); a draft model's forward 0.1 ms.
// `draft`: a fake draft model (same block layout) whose script is draft.peak.
struct DraftSpec {
  bool on = false;
  PeakFn peak;
};

Outcome RunAll(const std::vector<GenerationRequest>& requests, EngineConfig c, PeakFn peak,
               int64_t num_blocks = 4096, bool linear = false, DraftSpec draft = {}) {
  FakeRunnerOptions o;
  o.num_blocks = num_blocks;
  c.speculation.step_seconds = [linear](int64_t tokens) {
    return linear ? 1e-3 * static_cast<double>(tokens) : 1e-3;
  };
  c.speculation.draft_step_seconds = [](int64_t) { return 1e-4; };
  std::unique_ptr<ModelRunner> draft_runner;
  if (draft.on) {
    FakeRunnerOptions d;
    d.num_blocks = num_blocks;
    draft_runner =
        std::make_unique<FakeModelRunner>(d, std::make_shared<FakeRunnerProbe>(), draft.peak);
  }
  T tok;
  TestEngine t(o, c, &tok, std::move(peak), {}, false, /*gated=*/true, std::move(draft_runner));
  Collector collector;
  int choices = 0;
  for (size_t i = 0; i < requests.size(); ++i) {
    t.engine->Submit(requests[i], collector.Sink(static_cast<int>(i), requests[i].n));
    choices += requests[i].n;
  }
  t.OpenGate();
  EXPECT_TRUE(collector.Wait(choices));
  EXPECT_EQ(t.probe->violations, 0);
  Outcome run;
  run.stats = WaitIdle(*t.engine);
  for (size_t i = 0; i < requests.size(); ++i) {
    run.outputs.push_back(collector.Get(static_cast<int>(i)));
  }
  return run;
}

void ExpectSameOutputs(const Outcome& with, const Outcome& without) {
  ASSERT_EQ(with.outputs.size(), without.outputs.size());
  for (size_t i = 0; i < with.outputs.size(); ++i) {
    ASSERT_EQ(with.outputs[i].size(), without.outputs[i].size());
    for (size_t c = 0; c < with.outputs[i].size(); ++c) {
      const ChoiceOutput& a = with.outputs[i][c];
      const ChoiceOutput& b = without.outputs[i][c];
      EXPECT_EQ(a, b) << "request " << i << " choice " << c;
      EXPECT_EQ(a.logprobs, b.logprobs) << "request " << i;
      EXPECT_EQ(a.generated, b.generated);
      ASSERT_EQ(a.top.size(), b.top.size());
      for (size_t k = 0; k < a.top.size(); ++k) {
        ASSERT_EQ(a.top[k].size(), b.top[k].size());
        for (size_t j = 0; j < a.top[k].size(); ++j) EXPECT_EQ(a.top[k][j].id, b.top[k][j].id);
      }
    }
  }
}

TEST(EngineSpeculation, GreedyOutputIsUnchangedAndTakesFewerSteps) {
  const std::vector<GenerationRequest> one = {Request(30, 120)};
  const Outcome without = RunAll(one, EngineConfig{}, CopyingPeak);
  const Outcome with = RunAll(one, Speculating(4), CopyingPeak);
  ExpectSameOutputs(with, without);
  EXPECT_GT(with.stats.speculation.accepted_tokens, 40);
  EXPECT_LT(with.stats.steps * 3, without.stats.steps * 2) << with.stats.steps;
  EXPECT_EQ(with.stats.speculate, 4);
  EXPECT_EQ(without.stats.speculation.drafts, 0);
}

TEST(EngineSpeculation, SeededSamplingIsUnchanged) {
  std::vector<GenerationRequest> rs;
  for (int32_t first : {30, 40, 50}) rs.push_back(Request(first, 80, /*sample=*/true));
  rs[1].sampling.temperature = 0.7f;
  rs[2].sampling.top_k = 5;
  rs[2].sampling.repetition_penalty = 1.3f;
  rs[2].n = 2;
  const Outcome without = RunAll(rs, EngineConfig{}, CopyingPeak);
  const Outcome with = RunAll(rs, Speculating(6), CopyingPeak);
  ExpectSameOutputs(with, without);
  EXPECT_GT(with.stats.speculation.accepted_tokens, 0);
}

TEST(EngineSpeculation, ABatchOfSixteenIsUnchanged) {
  std::vector<GenerationRequest> rs;
  for (int32_t i = 0; i < 16; ++i) rs.push_back(Request(20 + i, 30 + 3 * i, i % 2 == 1));
  EngineConfig spec = Speculating(3);
  spec.speculation.max_step_tokens = 64;
  const Outcome without = RunAll(rs, EngineConfig{}, CopyingPeak);
  const Outcome with = RunAll(rs, spec, CopyingPeak);
  ExpectSameOutputs(with, without);
  EXPECT_GT(with.stats.speculation.accepted_tokens, 0);
}

TEST(EngineSpeculation, UnchangedWhenTheModelNeverRepeats) {
  std::vector<GenerationRequest> rs = {Request(30, 100), Request(31, 100, true)};
  const Outcome without = RunAll(rs, EngineConfig{}, {});
  const Outcome with = RunAll(rs, Speculating(4), {});
  ExpectSameOutputs(with, without);
  // Spurious matches are drafted (rows are free here) and seldom accepted; a step never yields
  // fewer tokens than without speculation.
  const SpeculationCounters& s = with.stats.speculation;
  EXPECT_LT(s.accepted_tokens * 4, s.draft_tokens);
  EXPECT_LE(with.stats.steps, without.stats.steps);
}

TEST(EngineSpeculation, UnchangedUnderKvPressureWithPreemption) {
  std::vector<GenerationRequest> rs;
  for (int32_t i = 0; i < 6; ++i) rs.push_back(Request(40 + i, 60, i % 2 == 0));
  const Outcome without = RunAll(rs, EngineConfig{}, CopyingPeak, /*num_blocks=*/40);
  const Outcome with = RunAll(rs, Speculating(4), CopyingPeak, /*num_blocks=*/40);
  ExpectSameOutputs(with, without);
  EXPECT_GT(with.stats.preemptions, 0);
  EXPECT_EQ(with.stats.kv_blocks_used, 0);
}

TEST(EngineSpeculation, LengthAndStopTokensAreExact) {
  GenerationRequest capped = Request(30, 13);
  GenerationRequest stopped = Request(31, 200);
  stopped.stop.ignore_eos = false;
  stopped.stop.stop_token_ids = {14};  // copied from the prompt: lands inside a draft
  const std::vector<GenerationRequest> rs = {capped, stopped};
  const Outcome without = RunAll(rs, EngineConfig{}, CopyingPeak);
  const Outcome with = RunAll(rs, Speculating(8), CopyingPeak);
  ExpectSameOutputs(with, without);
  EXPECT_EQ(with.outputs[0][0].tokens.size(), 13u);
  EXPECT_EQ(with.outputs[0][0].finish, FinishReason::kLength);
}

TEST(EngineSpeculation, NoDraftsWhereStepsCostPerToken) {
  // The same copying model, but every token of a step costs its share: a draft row costs what
  // a decode row yields, so the measured cost stops drafts after the first steps.
  const std::vector<GenerationRequest> one = {Request(30, 120)};
  const Outcome with = RunAll(one, Speculating(4), CopyingPeak, 4096, /*linear=*/true);
  const Outcome without = RunAll(one, EngineConfig{}, CopyingPeak, 4096, /*linear=*/true);
  ExpectSameOutputs(with, without);
  EXPECT_LT(with.stats.speculation.drafts, 10);
}

TEST(EngineSpeculation, TheStepCapBoundsDrafts) {
  std::vector<GenerationRequest> rs;
  for (int32_t i = 0; i < 40; ++i) rs.push_back(Request(10 + i, 20));
  EngineConfig spec = Speculating(4);
  spec.speculation.max_step_tokens = 32;  // 40 decodes alone are past it
  const Outcome with = RunAll(rs, spec, CopyingPeak);
  EXPECT_EQ(with.stats.speculation.drafts, 0);
}

TEST(EngineSpeculation, DraftModelOutputsAreUnchanged) {
  std::vector<GenerationRequest> rs;
  for (int32_t i = 0; i < 6; ++i) rs.push_back(Request(40 + i, 50 + 7 * i, i % 2 == 1));
  const Outcome without = RunAll(rs, EngineConfig{}, CopyingPeak);
  // A draft that agrees with the model (the same script), and one that never does.
  const Outcome agreeing =
      RunAll(rs, Speculating(4), CopyingPeak, 4096, false, {true, CopyingPeak});
  const Outcome random = RunAll(rs, Speculating(4), CopyingPeak, 4096, false, {true, {}});
  ExpectSameOutputs(agreeing, without);
  ExpectSameOutputs(random, without);
  const SpeculationCounters& a = agreeing.stats.speculation;
  // Greedy requests accept every draft; sampled ones (the fake's peak holds about a third of
  // the mass) about a third.
  EXPECT_GT(a.accepted_tokens * 10, a.draft_tokens * 4)
      << a.accepted_tokens << "/" << a.draft_tokens;
  EXPECT_LT(agreeing.stats.steps * 3, without.stats.steps * 2);
  EXPECT_LT(random.stats.speculation.accepted_tokens * 4, random.stats.speculation.draft_tokens);
  EXPECT_EQ(agreeing.stats.kv_blocks_used, 0);
}

TEST(EngineSpeculation, DraftModelUnderKvPressure) {
  std::vector<GenerationRequest> rs;
  for (int32_t i = 0; i < 6; ++i) rs.push_back(Request(40 + i, 60, i % 2 == 0));
  const Outcome without = RunAll(rs, EngineConfig{}, CopyingPeak, /*num_blocks=*/40);
  const Outcome with =
      RunAll(rs, Speculating(4), CopyingPeak, /*num_blocks=*/40, false, {true, CopyingPeak});
  ExpectSameOutputs(with, without);
  EXPECT_GT(with.stats.preemptions, 0);
  EXPECT_GT(with.stats.speculation.accepted_tokens, 0);
  EXPECT_EQ(with.stats.kv_blocks_used, 0);
}

TEST(EngineSpeculation, DraftModelMustShareTheVocabulary) {
  FakeRunnerOptions d;
  d.vocab = 65;
  auto probe = std::make_shared<FakeRunnerProbe>();
  auto make = [&] {
    Engine e(std::make_unique<FakeModelRunner>(FakeRunnerOptions{}, probe), nullptr, Speculating(4),
             std::make_unique<FakeModelRunner>(d, probe));
  };
  EXPECT_THROW(make(), Error);
}

TEST(EngineSpeculation, AcceptanceEstimate) {
  SpeculationState s;
  EXPECT_DOUBLE_EQ(s.acceptance, SpeculationState::kPrior);
  s.Record(4, 4);  // observed 1.0
  EXPECT_NEAR(s.acceptance, 0.65, 1e-12);
  s.Record(4, 1);  // 1 of 2 trials
  EXPECT_NEAR(s.acceptance, 0.605, 1e-12);
  for (int i = 0; i < 30; ++i) s.Record(2, 0);
  EXPECT_LT(s.acceptance, 0.01);
  const double low = s.acceptance;
  for (int i = 0; i < 64; ++i) s.Idle();  // drifts back toward the prior
  EXPECT_GT(s.acceptance, low + 0.3);
  EXPECT_LT(s.acceptance, SpeculationState::kPrior);
  EXPECT_EQ(s.drafted, 8 + 60);
}

StepCost Curve(std::initializer_list<std::pair<int64_t, double>> points) {
  StepCost c;
  for (auto [tokens, seconds] : points) c.Observe(tokens, seconds);
  return c;
}

TEST(EngineSpeculation, StepCostInterpolates) {
  EXPECT_EQ(StepCost().Estimate(3), 0.0);
  const StepCost c = Curve({{1, 1.0}, {5, 3.0}});
  EXPECT_DOUBLE_EQ(c.Estimate(1), 1.0);
  EXPECT_DOUBLE_EQ(c.Estimate(3), 2.0);   // between measured sizes
  EXPECT_DOUBLE_EQ(c.Estimate(10), 6.0);  // past the largest: proportional
  const StepCost only_large = Curve({{8, 2.0}});
  EXPECT_DOUBLE_EQ(only_large.Estimate(2), 0.5);  // below the smallest: proportional
  StepCost averaged = Curve({{2, 1.0}});
  averaged.Observe(2, 2.0);
  EXPECT_DOUBLE_EQ(averaged.Estimate(2), 1.2);
}

std::vector<int32_t> Allot(std::vector<DraftCandidate> c, int64_t base, double yield,
                           const StepCost& cost, int64_t cap = 64, double round = 0.0) {
  AllotDrafts(c, base, yield, cap, cost, round);
  std::vector<int32_t> out;
  for (const DraftCandidate& d : c) out.push_back(d.allotted);
  return out;
}

TEST(EngineSpeculation, DraftsAreAllottedWhereTheyPay) {
  // Flat to 4 rows, then 1.0 per row: one stream drafts 3 (its 4th would cost 1.0 for 0.9^4).
  const StepCost knee = Curve({{1, 1.0}, {4, 1.0}, {8, 5.0}});
  EXPECT_EQ(Allot({{0.9, 6}}, 1, 1, knee), (std::vector<int32_t>{3}));
  // Two streams share the three free rows by expected gain: 0.9, 0.81 of the first, 0.5 next.
  EXPECT_EQ(Allot({{0.9, 4}, {0.5, 4}}, 2, 2, knee), (std::vector<int32_t>{2, 0}));
  EXPECT_EQ(Allot({{0.9, 1}, {0.5, 4}}, 2, 2, knee), (std::vector<int32_t>{1, 1}));
  // A linear cost: a row yields less than a decode row does, so nothing is drafted.
  const StepCost linear = Curve({{1, 1.0}, {64, 64.0}});
  EXPECT_EQ(Allot({{0.95, 4}, {0.95, 4}}, 16, 16, linear), (std::vector<int32_t>{0, 0}));
  // Nothing measured yet: everything proposed, up to the cap.
  EXPECT_EQ(Allot({{0.1, 4}, {0.1, 4}}, 2, 2, StepCost(), 7), (std::vector<int32_t>{3, 2}));
  // Past a jump (a second pass over the weights at 5 rows) a long draft can pay again.
  const StepCost tiles = Curve({{1, 1.0}, {4, 1.0}, {5, 1.5}, {8, 1.5}});
  EXPECT_EQ(Allot({{0.99, 8}}, 1, 1, tiles), (std::vector<int32_t>{7}));
  // A draft model's rounds cost time of their own: at 0.6 of a step each, one drafted token at
  // acceptance 0.5 yields 1.5 tokens in 1.6 steps (less than 1 in 1); at 0.05 a round and
  // acceptance 0.9, all four pay (4.1 tokens in 1.2 steps).
  const StepCost flat = Curve({{1, 1.0}, {8, 1.0}});
  EXPECT_EQ(Allot({{0.5, 4}}, 1, 1, flat, 64, 0.6), (std::vector<int32_t>{0}));
  EXPECT_EQ(Allot({{0.9, 4}}, 1, 1, flat, 64, 0.05), (std::vector<int32_t>{4}));
}

TEST(EngineSpeculation, CountersBucketTheAcceptanceRate) {
  SpeculationCounters c;
  c.Record(4, 0);
  c.Record(4, 1);
  c.Record(4, 3);
  c.Record(4, 4);
  EXPECT_EQ(c.drafts, 4);
  EXPECT_EQ(c.draft_tokens, 16);
  EXPECT_EQ(c.accepted_tokens, 8);
  EXPECT_EQ(c.by_rate, (std::array<int64_t, 5>{1, 1, 0, 1, 1}));
}

}  // namespace
}  // namespace kiln::testing
