// Event collection and helpers shared by the engine tests.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "engine/engine.h"
#include "engine/fake_model_runner.h"
#include "engine/fake_tokenizer.h"
#include "util/utf8.h"

namespace kiln::testing {

struct ChoiceOutput {
  std::vector<int32_t> tokens;
  std::vector<float> logprobs;
  std::vector<std::vector<TopToken>> top;
  std::string text;
  std::optional<FinishReason> finish;
  std::string error;
  int32_t generated = 0;
  uint64_t seed = 0;
  bool operator==(const ChoiceOutput& o) const {
    return tokens == o.tokens && text == o.text && finish == o.finish;
  }
};

inline std::ostream& operator<<(std::ostream& os, const ChoiceOutput& c) {
  os << "{tokens:";
  for (int32_t t : c.tokens) os << " " << t;
  return os << ", finish: " << (c.finish ? FinishReasonName(*c.finish) : "none") << "}";
}

// Thread-safe sink factory. Checks every event: valid UTF-8 text, nothing after a finish,
// generated_tokens counting up.
class Collector {
 public:
  using OnEvent = std::function<bool(const GenerationEvent&)>;

  EventSink Sink(int key, int n, OnEvent on_event = {}) {
    std::lock_guard lock(mu_);
    outputs_[key].resize(n);
    return [this, key, on_event = std::move(on_event)](GenerationEvent&& ev) {
      const bool keep = on_event ? on_event(ev) : true;
      Record(key, ev, keep);
      return keep;
    };
  }

  // Waits until `choices` choices have finished (or their client went away).
  bool Wait(int choices, std::chrono::seconds timeout = std::chrono::seconds(60)) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, timeout, [&] { return done_ >= choices; });
  }
  std::vector<ChoiceOutput> Get(int key) {
    std::lock_guard lock(mu_);
    return outputs_[key];
  }
  int violations() const { return violations_; }

 private:
  void Fail(const std::string& what) {
    ++violations_;
    ADD_FAILURE() << what;
  }
  void Record(int key, const GenerationEvent& ev, bool keep) {
    std::lock_guard lock(mu_);
    auto& choices = outputs_[key];
    if (gone_.count(key)) return Fail("event after the sink returned false");
    if (ev.choice < 0 || ev.choice >= static_cast<int>(choices.size())) return Fail("bad choice");
    ChoiceOutput& c = choices[ev.choice];
    if (c.finish) return Fail("event after finish");
    if (CompleteUtf8Prefix(ev.text) != ev.text.size() || ValidUtf8OrReplace(ev.text) != ev.text) {
      Fail("event text is not valid UTF-8");
    }
    if (ev.token_id >= 0) {
      c.tokens.push_back(ev.token_id);
      c.logprobs.push_back(ev.logprob);
      c.top.push_back(ev.top);
    }
    if (ev.generated_tokens != static_cast<int32_t>(c.tokens.size())) {
      Fail("generated_tokens does not count the events");
    }
    c.text += ev.text;
    c.generated = ev.generated_tokens;
    c.seed = ev.seed;
    if (ev.finish) {
      c.finish = ev.finish;
      c.error = ev.error;
      ++done_;
    }
    if (!keep) {  // the engine drops the other choices silently
      gone_.insert(key);
      for (ChoiceOutput& other : choices) done_ += &other != &c && !other.finish;
      if (!ev.finish) ++done_;
    }
    cv_.notify_all();
  }

  std::mutex mu_;
  std::condition_variable cv_;
  std::map<int, std::vector<ChoiceOutput>> outputs_;
  std::set<int> gone_;
  int done_ = 0;
  std::atomic<int> violations_{0};
};

// Polls until nothing is queued, running or holding KV blocks.
inline EngineStats WaitIdle(const Engine& engine) {
  EngineStats s;
  for (int i = 0; i < 2000; ++i) {
    s = engine.Stats();
    if (s.queued == 0 && s.running == 0 && s.kv_blocks_used == 0) return s;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ADD_FAILURE() << "engine not idle: queued " << s.queued << " running " << s.running << " blocks "
                << s.kv_blocks_used;
  return s;
}

// An engine over a fake runner that checks the engine's budget and batch size. Hooks must be
// set before the engine exists (they run on its thread): pass them here.
struct TestEngine {
  using Hook = std::function<void(TestEngine&, int64_t step, const Batch&,
                                  const std::vector<int32_t>& firsts)>;

  // gated: the first forward pass waits for OpenGate(), so requests submitted before it all
  // meet in the queue whatever the thread timing.
  TestEngine(FakeRunnerOptions o, EngineConfig c, const Tokenizer* tokenizer, PeakFn peak = {},
             Hook hook = {}, bool record = false, bool gated = false,
             std::unique_ptr<ModelRunner> draft = nullptr)
      : probe(std::make_shared<FakeRunnerProbe>()), gate_open_(gate_.get_future().share()) {
    o.max_batch_tokens = c.max_batch_prefill_tokens;
    o.max_batch_size = std::min(c.max_batch_size, c.max_batch_prefill_tokens);
    probe->record = record;
    probe->on_step = [this, hook, gated](int64_t step, const Batch& b,
                                         const std::vector<int32_t>& f) {
      if (gated && step == 0) gate_open_.wait();
      if (hook) hook(*this, step, b, f);
    };
    engine = std::make_unique<Engine>(std::make_unique<FakeModelRunner>(o, probe, peak), tokenizer,
                                      c, std::move(draft));
  }
  ~TestEngine() {
    OpenGate();
    engine.reset();
  }
  void OpenGate() {
    if (!gate_opened_.exchange(true)) gate_.set_value();
  }
  // Steps in which a sequence whose history starts with `first` ran.
  std::vector<int64_t> StepsWith(int32_t first) {
    std::lock_guard lock(probe->mu);
    std::vector<int64_t> steps;
    for (size_t i = 0; i < probe->firsts.size(); ++i) {
      for (int32_t f : probe->firsts[i]) {
        if (f == first) {
          steps.push_back(static_cast<int64_t>(i));
          break;
        }
      }
    }
    return steps;
  }

  std::shared_ptr<FakeRunnerProbe> probe;

 private:
  std::promise<void> gate_;
  std::shared_future<void> gate_open_;
  std::atomic<bool> gate_opened_{false};

 public:
  std::unique_ptr<Engine> engine;  // last: destroyed first, while the gate still exists
};

// A model that says script[k] as its k-th generated token (prompt of `prompt_len` tokens).
inline PeakFn Script(std::vector<int32_t> script, size_t prompt_len) {
  return [script, prompt_len](std::span<const int32_t> history) {
    const size_t k = history.size() - prompt_len;
    return script[std::min(k, script.size() - 1)];
  };
}

// Greedy tokens of the default fake model, computed directly (no engine).
inline std::vector<int32_t> GreedyReference(std::vector<int32_t> history, int32_t max_new,
                                            const std::vector<int32_t>& stop_ids) {
  std::vector<int32_t> out;
  std::vector<float> logits(64);
  while (static_cast<int32_t>(out.size()) < max_new) {
    FakeLogits(history, 64, {}, logits.data());
    const auto token =
        static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
    out.push_back(token);
    history.push_back(token);
    if (std::find(stop_ids.begin(), stop_ids.end(), token) != stop_ids.end()) break;
  }
  return out;
}

// The request's output from an engine that runs nothing else, with a roomy KV pool.
inline std::vector<ChoiceOutput> RunAlone(const GenerationRequest& request,
                                          const Tokenizer* tokenizer, PeakFn peak = {}) {
  FakeRunnerOptions o;
  o.num_blocks = 4096;
  EngineConfig c;
  TestEngine t(o, c, tokenizer, peak);
  Collector collector;
  t.engine->Submit(request, collector.Sink(0, request.n));
  EXPECT_TRUE(collector.Wait(request.n));
  EXPECT_EQ(t.probe->violations, 0);
  return collector.Get(0);
}

}  // namespace kiln::testing
