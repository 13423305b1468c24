// 2,000 requests at concurrency 16 over a small KV pool (constant preemption), 30% cancelled at
// random points three different ways. The engine must end with no sequence and no block held,
// every choice finished exactly once, and the fake runner must never see a bad batch.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

#include "engine/engine.h"
#include "engine/engine_test_util.h"

namespace kiln::testing {
namespace {

constexpr int kRequests = 2000;
constexpr int kConcurrency = 16;

enum class CancelMode { kNone, kRightAway, kSinkReturnsFalse, kCancelFromSink, kCancelLater };

struct Plan {
  GenerationRequest request;
  CancelMode cancel = CancelMode::kNone;
  int cancel_after = 0;  // events
};

Plan RandomPlan(std::mt19937& rng, int i) {
  Plan p;
  GenerationRequest& r = p.request;
  const int len = 1 + static_cast<int>(rng() % 48);
  for (int k = 0; k < len; ++k) r.prompt.push_back(static_cast<int32_t>(4 + rng() % 60));
  if (i % 3 == 0) r.prompt[0] = 5;  // some shared prefixes
  r.stop.max_new_tokens = 1 + static_cast<int32_t>(rng() % 48);
  r.stop.min_tokens = static_cast<int32_t>(rng() % 3);
  r.n = rng() % 10 == 0 ? 2 : 1;
  if (rng() % 4 == 0) r.stop.stop_sequences = {"w4", "\xE2\x82\xAC"};
  if (rng() % 2 == 0) {
    r.sampling.do_sample = true;
    r.sampling.temperature = 0.5f + static_cast<float>(rng() % 10) / 10;
    r.sampling.top_k = static_cast<int32_t>(rng() % 30);
    r.sampling.top_p = rng() % 2 ? 0.9f : 1.0f;
    r.sampling.min_p = rng() % 3 == 0 ? 0.05f : 0.0f;
    r.sampling.typical_p = rng() % 5 == 0 ? 0.9f : 1.0f;
    r.sampling.frequency_penalty = rng() % 4 == 0 ? 0.5f : 0.0f;
  }
  r.logprobs = rng() % 3 == 0;
  r.top_n_tokens = static_cast<int32_t>(rng() % 3);
  const int roll = static_cast<int>(rng() % 100);
  if (roll < 30) {
    p.cancel = static_cast<CancelMode>(1 + roll % 4);
    p.cancel_after = static_cast<int>(rng() % 20);
  }
  return p;
}

using T = FakeTokenizer;

TEST(EngineSoak, ManyRequestsWithCancellationsLeaveNothingBehind) {
  T tok;
  FakeRunnerOptions o;
  o.num_blocks = 80;  // 320 tokens; each request needs up to 96
  EngineConfig c;
  c.max_batch_prefill_tokens = 32;
  c.max_batch_size = 8;
  TestEngine t(o, c, &tok);
  Collector col;

  std::mutex mu;
  std::condition_variable cv;
  int in_flight = 0;
  std::atomic<int> finished_requests{0};
  std::mt19937 rng(2024);
  std::vector<std::thread> cancellers;

  for (int i = 0; i < kRequests; ++i) {
    Plan plan = RandomPlan(rng, i);
    {
      std::unique_lock lock(mu);
      cv.wait(lock, [&] { return in_flight < kConcurrency; });
      ++in_flight;
    }
    auto id_holder = std::make_shared<std::atomic<Engine::RequestId>>(0);
    auto events = std::make_shared<int>(0);
    auto remaining = std::make_shared<int>(plan.request.n);
    Engine* engine = t.engine.get();
    auto on_event = [&, plan_cancel = plan.cancel, after = plan.cancel_after, id_holder, events,
                     remaining, engine](const GenerationEvent& ev) {
      ++*events;
      bool keep = true;
      if (plan_cancel == CancelMode::kSinkReturnsFalse && *events > after) keep = false;
      if (plan_cancel == CancelMode::kCancelFromSink && *events == after + 1) {
        while (*id_holder == 0) std::this_thread::yield();
        engine->Cancel(*id_holder);
      }
      const bool request_done = !keep || (ev.finish && --*remaining == 0);
      if (request_done) {
        ++finished_requests;
        std::lock_guard lock(mu);
        --in_flight;
        cv.notify_all();
      }
      return keep;
    };
    const auto id = t.engine->Submit(plan.request, col.Sink(i, plan.request.n, on_event));
    *id_holder = id;
    if (plan.cancel == CancelMode::kRightAway) t.engine->Cancel(id);
    if (plan.cancel == CancelMode::kCancelLater) {
      cancellers.emplace_back([engine, id, us = plan.cancel_after * 300] {
        std::this_thread::sleep_for(std::chrono::microseconds(us));
        engine->Cancel(id);
      });
    }
  }
  for (auto& th : cancellers) th.join();
  {
    std::unique_lock lock(mu);
    ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(60), [&] { return in_flight == 0; }));
  }
  EXPECT_EQ(finished_requests, kRequests);
  const EngineStats s = WaitIdle(*t.engine);
  EXPECT_EQ(s.running, 0);
  EXPECT_EQ(s.queued, 0);
  EXPECT_EQ(s.kv_blocks_used, 0);
  EXPECT_GT(s.preemptions, 0);
  EXPECT_GT(s.prefix_cache_hits, 0);
  EXPECT_EQ(t.probe->violations, 0);
  EXPECT_EQ(col.violations(), 0);
  int cancelled = 0;
  for (int i = 0; i < kRequests; ++i) {
    for (const auto& choice : col.Get(i)) {
      cancelled += choice.finish == FinishReason::kCancelled;
      EXPECT_NE(choice.finish, FinishReason::kError) << i;
    }
  }
  EXPECT_GT(cancelled, kRequests / 20);
}

}  // namespace
}  // namespace kiln::testing
