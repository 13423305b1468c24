// Submit validation, cancellation in every state, client disconnects, model errors, shutdown.
#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <vector>

#include "engine/engine.h"
#include "engine/engine_test_util.h"
#include "util/error.h"

namespace kiln::testing {
namespace {

using T = FakeTokenizer;

GenerationRequest Request(std::vector<int32_t> prompt, int32_t max_new) {
  GenerationRequest r;
  r.prompt = std::move(prompt);
  r.stop.max_new_tokens = max_new;
  r.stop.ignore_eos = true;
  return r;
}

std::vector<int32_t> Prompt(int32_t first, int32_t len) {
  std::vector<int32_t> p(len, 30);
  p[0] = first;
  return p;
}

TEST(EngineLifecycle, SubmitRejectsWhatCanNeverRun) {
  T tok;
  FakeRunnerOptions o;
  o.num_blocks = 16;  // 64 tokens
  o.max_context = 100;
  TestEngine t(o, EngineConfig{}, &tok);
  Collector col;
  auto submit = [&](GenerationRequest r) { return t.engine->Submit(r, col.Sink(0, r.n)); };
  EXPECT_THROW(submit(Request({}, 4)), Error);
  EXPECT_THROW(submit(Request({64}, 4)), Error);
  EXPECT_THROW(submit(Request(Prompt(5, 50), 60)), Error);  // > max_context
  EXPECT_THROW(submit(Request(Prompt(5, 60), 10)), Error);  // 69 positions > 16 blocks
  GenerationRequest zero_n = Request({5}, 4);
  zero_n.n = 0;
  EXPECT_THROW(submit(zero_n), Error);
  EXPECT_THROW(t.engine->Submit(Request({5}, 4), nullptr), Error);
  try {
    submit(Request(Prompt(5, 50), 60));
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(),
                 "`inputs` tokens + `max_new_tokens` must be <= 100. Given: 50 `inputs` tokens "
                 "and 60 `max_new_tokens`");
  }
  submit(Request(Prompt(5, 60), 5));  // 64 positions: exactly the pool
  EXPECT_TRUE(col.Wait(1));
  EXPECT_EQ(col.Get(0)[0].finish, FinishReason::kLength);

  TestEngine bare(o, EngineConfig{}, nullptr);
  GenerationRequest stops = Request({5}, 4);
  stops.stop.stop_sequences = {"x"};
  EXPECT_THROW(bare.engine->Submit(stops, col.Sink(1, 1)), Error);
}

TEST(EngineLifecycle, SubmitRefusesWhenTheQueueIsFull) {
  std::promise<void> entered, release;
  auto released = release.get_future().share();
  EngineConfig c;
  c.max_queue = 2;
  TestEngine t(FakeRunnerOptions{}, c, nullptr, {},
               [&](TestEngine&, int64_t step, const Batch&, const std::vector<int32_t>&) {
                 if (step == 0) {
                   entered.set_value();
                   released.wait();
                 }
               });
  Collector col;
  t.engine->Submit(Request({5}, 3), col.Sink(0, 1));
  entered.get_future().wait();  // the engine is inside its first forward pass
  t.engine->Submit(Request({6}, 3), col.Sink(1, 1));
  t.engine->Submit(Request({7}, 3), col.Sink(2, 1));
  EXPECT_EQ(t.engine->Stats().queued, 2);
  EXPECT_THROW(t.engine->Submit(Request({8}, 3), col.Sink(3, 1)), Error);
  release.set_value();
  EXPECT_TRUE(col.Wait(3));
  WaitIdle(*t.engine);
}

TEST(EngineLifecycle, CancelWhileQueued) {
  EngineConfig c;
  c.max_batch_size = 1;
  TestEngine t(FakeRunnerOptions{}, c, nullptr, {}, {}, /*record=*/true);
  Collector col;
  t.engine->Submit(Request(Prompt(40, 4), 30), col.Sink(0, 1));
  const auto id = t.engine->Submit(Request(Prompt(41, 4), 30), col.Sink(1, 1));
  t.engine->Cancel(id);
  ASSERT_TRUE(col.Wait(2));
  const auto out = col.Get(1)[0];
  EXPECT_EQ(out.finish, FinishReason::kCancelled);
  EXPECT_TRUE(out.tokens.empty());
  EXPECT_TRUE(t.StepsWith(41).empty());  // never ran
  EXPECT_EQ(col.Get(0)[0].tokens.size(), 30u);
  WaitIdle(*t.engine);
}

// Cancels request 50 from inside the step where `when` first holds, then checks it ran in no
// later step: its blocks were freed before the next batch was built.
void CancelAt(std::function<bool(const BatchSequence&)> when, int expect_min_tokens,
              int expect_max_tokens) {
  EngineConfig c;
  c.max_batch_prefill_tokens = 8;
  std::atomic<Engine::RequestId> id{0};
  std::atomic<int64_t> cancel_step{-1};
  TestEngine t(
      FakeRunnerOptions{}, c, nullptr, {},
      [&](TestEngine& te, int64_t step, const Batch& b, const std::vector<int32_t>& f) {
        if (cancel_step >= 0) return;
        for (size_t i = 0; i < b.seqs.size(); ++i) {
          if (f[i] != 50 || !when(b.seqs[i])) continue;
          while (id == 0) std::this_thread::yield();
          cancel_step = step;
          te.engine->Cancel(id);
        }
      },
      /*record=*/true);
  Collector col;
  t.engine->Submit(Request(Prompt(60, 3), 40), col.Sink(0, 1));  // keeps decoding alongside
  id = t.engine->Submit(Request(Prompt(50, 40), 40), col.Sink(1, 1));
  ASSERT_TRUE(col.Wait(2));
  const auto out = col.Get(1)[0];
  EXPECT_EQ(out.finish, FinishReason::kCancelled);
  EXPECT_GE(static_cast<int>(out.tokens.size()), expect_min_tokens);
  EXPECT_LE(static_cast<int>(out.tokens.size()), expect_max_tokens);
  ASSERT_GE(cancel_step, 0);
  const auto steps = t.StepsWith(50);
  ASSERT_FALSE(steps.empty());
  EXPECT_EQ(steps.back(), cancel_step);
  EXPECT_EQ(WaitIdle(*t.engine).kv_blocks_used, 0);
}

TEST(EngineLifecycle, CancelMidPrefill) {
  CancelAt([](const BatchSequence& s) { return s.start_pos >= 16 && s.start_pos < 40; }, 0, 0);
}

TEST(EngineLifecycle, CancelWhileDecoding) {
  CancelAt([](const BatchSequence& s) { return s.start_pos >= 45; }, 5, 7);
}

TEST(EngineLifecycle, ClientGoneStopsEveryChoice) {
  TestEngine t(FakeRunnerOptions{}, EngineConfig{}, nullptr, {}, {}, /*record=*/true);
  Collector col;
  int events = 0;
  GenerationRequest r = Request(Prompt(50, 9), 50);
  r.n = 3;
  t.engine->Submit(r, col.Sink(0, 3, [&](const GenerationEvent&) { return ++events < 5; }));
  ASSERT_TRUE(col.Wait(3));
  EXPECT_EQ(events, 5);  // the collector fails the test on any event after the 5th
  const auto s = WaitIdle(*t.engine);
  EXPECT_EQ(s.running, 0);
  EXPECT_LE(t.StepsWith(50).size(), 6u);
}

TEST(EngineLifecycle, CancellingTwiceOrAfterTheEndIsHarmless) {
  TestEngine t(FakeRunnerOptions{}, EngineConfig{}, nullptr);
  Collector col;
  const auto id = t.engine->Submit(Request({5}, 2), col.Sink(0, 1));
  ASSERT_TRUE(col.Wait(1));
  t.engine->Cancel(id);
  t.engine->Cancel(id);
  t.engine->Cancel(12345);
  EXPECT_EQ(col.Get(0)[0].finish, FinishReason::kLength);
  WaitIdle(*t.engine);
}

TEST(EngineLifecycle, ForwardErrorFailsThatBatchAndTheEngineLivesOn) {
  TestEngine t(FakeRunnerOptions{}, EngineConfig{}, nullptr, {}, {}, false, /*gated=*/true);
  t.probe->throw_at_step = 1;  // all three run in steps 0 and 1
  Collector col;
  for (int i = 0; i < 3; ++i) t.engine->Submit(Request({5 + i}, 10), col.Sink(i, 1));
  t.OpenGate();
  ASSERT_TRUE(col.Wait(3));
  for (int i = 0; i < 3; ++i) {
    const auto out = col.Get(i)[0];
    EXPECT_EQ(out.finish, FinishReason::kError);
    EXPECT_EQ(out.error, "fake forward failed");
  }
  EXPECT_EQ(WaitIdle(*t.engine).kv_blocks_used, 0);
  t.engine->Submit(Request({9}, 10), col.Sink(9, 1));
  ASSERT_TRUE(col.Wait(4));
  EXPECT_EQ(col.Get(9)[0].finish, FinishReason::kLength);
}

TEST(EngineLifecycle, ShutdownCancelsWhatIsPending) {
  Collector col;
  {
    EngineConfig c;
    c.max_batch_size = 2;
    TestEngine t(FakeRunnerOptions{}, c, nullptr);
    for (int i = 0; i < 6; ++i) {
      GenerationRequest r = Request({5 + i}, 1000);
      r.n = 2;
      t.engine->Submit(r, col.Sink(i, 2));
    }
  }
  ASSERT_TRUE(col.Wait(12, std::chrono::seconds(1)));
  for (int i = 0; i < 6; ++i) {
    for (const auto& c : col.Get(i)) EXPECT_EQ(c.finish, FinishReason::kCancelled);
  }
}

}  // namespace
}  // namespace kiln::testing
