// Scheduling seen from outside: budgets, FIFO admission, preemption, prefix-cache hits, and
// batch invariance (a request's tokens do not depend on what else runs).
#include <gtest/gtest.h>

#include <future>
#include <random>
#include <vector>

#include "engine/engine.h"
#include "engine/engine_test_util.h"

namespace kiln::testing {
namespace {

using T = FakeTokenizer;

GenerationRequest Request(std::vector<int32_t> prompt, int32_t max_new) {
  GenerationRequest r;
  r.prompt = std::move(prompt);
  r.stop.max_new_tokens = max_new;
  return r;
}

std::vector<int32_t> RandomPrompt(std::mt19937& rng, int32_t first, int len) {
  std::vector<int32_t> p(len);
  p[0] = first;
  for (int i = 1; i < len; ++i) p[i] = static_cast<int32_t>(4 + rng() % 60);
  return p;
}

TEST(EngineScheduling, BatchesFillTheBudgetAndTheBatchSize) {
  EngineConfig c;
  c.max_batch_prefill_tokens = 16;
  c.max_batch_size = 4;
  // The runner checks every batch against both limits.
  TestEngine t(FakeRunnerOptions{}, c, nullptr, {}, {}, false, /*gated=*/true);
  Collector col;
  std::mt19937 rng(1);
  for (int i = 0; i < 12; ++i) {
    GenerationRequest r = Request(RandomPrompt(rng, 40 + i, 5 + i * 3), 10);
    t.engine->Submit(r, col.Sink(i, 1));
  }
  t.OpenGate();
  ASSERT_TRUE(col.Wait(12));
  EXPECT_EQ(t.probe->max_tokens, 16);  // chunked prefill used the whole budget
  EXPECT_EQ(t.probe->max_seqs, 4);
  EXPECT_EQ(t.probe->violations, 0);
  WaitIdle(*t.engine);
}

TEST(EngineScheduling, AdmissionIsFirstInFirstOut) {
  EngineConfig c;
  c.max_batch_size = 2;
  TestEngine t(FakeRunnerOptions{}, c, nullptr, {}, {}, /*record=*/true, /*gated=*/true);
  Collector col;
  for (int i = 0; i < 10; ++i) {
    GenerationRequest r = Request({40 + i, 5, 6}, 3 + (i * 7) % 5);
    r.stop.ignore_eos = true;
    t.engine->Submit(r, col.Sink(i, 1));
  }
  t.OpenGate();
  ASSERT_TRUE(col.Wait(10));
  int64_t last_start = -1;
  for (int i = 1; i < 10; ++i) {  // request 0 may have run alone in step 0
    const auto steps = t.StepsWith(40 + i);
    ASSERT_FALSE(steps.empty());
    EXPECT_GE(steps.front(), last_start) << i;
    last_start = steps.front();
  }
  WaitIdle(*t.engine);
}

TEST(EngineScheduling, PrefixCacheHitsAreCountedAndChangeNothing) {
  TestEngine t(FakeRunnerOptions{}, EngineConfig{}, nullptr);
  Collector col;
  std::mt19937 rng(5);
  GenerationRequest r = Request(RandomPrompt(rng, 40, 17), 8);
  r.stop.ignore_eos = true;
  t.engine->Submit(r, col.Sink(0, 1));
  ASSERT_TRUE(col.Wait(1));
  EXPECT_EQ(WaitIdle(*t.engine).prefix_cache_hits, 0);
  t.engine->Submit(r, col.Sink(1, 1));
  ASSERT_TRUE(col.Wait(2));
  EXPECT_EQ(WaitIdle(*t.engine).prefix_cache_hits, 4);  // 16 of 17 prompt tokens
  EXPECT_EQ(col.Get(0), col.Get(1));
  GenerationRequest longer = r;  // a follow-up turn of the conversation
  const std::vector<int32_t> answer = col.Get(0)[0].tokens;
  longer.prompt.insert(longer.prompt.end(), answer.begin(), answer.end());
  t.engine->Submit(longer, col.Sink(2, 1));
  ASSERT_TRUE(col.Wait(3));
  // The first run registered 6 full blocks: its prompt's and its generated tokens' (all but the
  // last generated token have KV). The follow-up reuses all 6 and computes 1 token.
  EXPECT_EQ(WaitIdle(*t.engine).prefix_cache_hits, 4 + 6);
  EXPECT_EQ(col.Get(2), RunAlone(longer, nullptr));
}

// Runs `requests` together on a small, busy engine, several arriving while others run, and
// checks each output equals the request's output alone.
void ExpectBatchInvariance(const std::vector<GenerationRequest>& requests, FakeRunnerOptions o,
                           EngineConfig c, bool expect_preemption) {
  T tok;
  Collector col;
  const size_t upfront = requests.size() / 4;
  std::atomic<size_t> next{upfront};
  TestEngine t(
      o, c, &tok, {},
      [&](TestEngine& te, int64_t step, const Batch&, const std::vector<int32_t>&) {
        // Staggered arrival: one more request every other step.
        if (step % 2 == 0) {
          const size_t i = next++;
          if (i < requests.size()) {
            te.engine->Submit(requests[i], col.Sink(static_cast<int>(i), requests[i].n));
          }
        }
      },
      false, /*gated=*/true);
  for (size_t i = 0; i < upfront; ++i) {
    t.engine->Submit(requests[i], col.Sink(static_cast<int>(i), requests[i].n));
  }
  t.OpenGate();
  while (next < requests.size()) {  // the engine ran dry before all arrived: feed it
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    const EngineStats s = t.engine->Stats();
    if (s.running > 0 || s.queued > 0) continue;
    const size_t i = next++;
    if (i < requests.size()) {
      t.engine->Submit(requests[i], col.Sink(static_cast<int>(i), requests[i].n));
    }
  }
  int choices = 0;
  for (const auto& r : requests) choices += r.n;
  ASSERT_TRUE(col.Wait(choices));
  const EngineStats stats = WaitIdle(*t.engine);
  EXPECT_EQ(t.probe->violations, 0);
  if (expect_preemption) {
    EXPECT_GT(stats.preemptions, 0);
  }
  for (size_t i = 0; i < requests.size(); ++i) {
    EXPECT_EQ(col.Get(static_cast<int>(i)), RunAlone(requests[i], &tok)) << "request " << i;
  }
}

std::vector<GenerationRequest> MixedRequests(bool sample) {
  std::mt19937 rng(sample ? 7 : 3);
  std::vector<GenerationRequest> out;
  for (int i = 0; i < 32; ++i) {
    GenerationRequest r = Request(RandomPrompt(rng, 4 + i, 1 + static_cast<int>(rng() % 60)),
                                  1 + static_cast<int32_t>(rng() % 40));
    if (i % 5 == 0 && i > 0) r.prompt = out[0].prompt;  // shared prefixes exercise the cache
    if (i % 7 == 3) r.stop.stop_sequences = {"w3", "\xC3\xA9"};
    if (sample) {
      r.sampling.do_sample = true;
      r.sampling.temperature = 0.8f;
      r.sampling.top_k = i % 3 == 0 ? 0 : 20;
      r.sampling.top_p = 0.95f;
      r.sampling.repetition_penalty = i % 2 ? 1.1f : 1.0f;
      r.sampling.presence_penalty = i % 4 == 1 ? 0.3f : 0.0f;
      r.sampling.seed = 1000 + i;
      r.n = i % 6 == 2 ? 2 : 1;
    }
    out.push_back(std::move(r));
  }
  return out;
}

TEST(EngineScheduling, GreedyOutputsDoNotDependOnTheBatch) {
  EngineConfig c;
  c.max_batch_prefill_tokens = 24;
  c.max_batch_size = 8;
  ExpectBatchInvariance(MixedRequests(false), FakeRunnerOptions{}, c, false);
}

TEST(EngineScheduling, SeededSamplingDoesNotDependOnTheBatch) {
  EngineConfig c;
  c.max_batch_prefill_tokens = 24;
  c.max_batch_size = 8;
  ExpectBatchInvariance(MixedRequests(true), FakeRunnerOptions{}, c, false);
}

TEST(EngineScheduling, PreemptionAndResumeGiveTheUninterruptedTokens) {
  EngineConfig c;
  c.max_batch_prefill_tokens = 32;
  c.max_batch_size = 16;
  FakeRunnerOptions o;
  o.num_blocks = 30;  // 120 tokens for up to 16 sequences of up to 100
  for (bool sample : {false, true}) {
    auto requests = MixedRequests(sample);
    for (auto& r : requests) r.stop.ignore_eos = true;  // long sequences: more pressure
    ExpectBatchInvariance(requests, o, c, true);
  }
}

}  // namespace
}  // namespace kiln::testing
