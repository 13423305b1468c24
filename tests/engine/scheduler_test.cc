// The scheduler on its own: hand-made sequences, a KV manager, and a simulated forward pass.
#include "engine/scheduler.h"

#include <gtest/gtest.h>

#include <deque>
#include <memory>
#include <numeric>
#include <vector>

namespace kiln {
namespace {

class SchedulerTest : public ::testing::Test {
 protected:
  void Init(int32_t blocks, int32_t max_batch_size, int64_t budget, bool prefix = true) {
    kv_ = std::make_unique<KvCacheManager>(blocks, 4, prefix);
    scheduler_ = std::make_unique<Scheduler>(SchedulerConfig{max_batch_size, budget, prefix}, *kv_);
  }
  // A waiting request with `n` choices and a prompt of `len` tokens starting at `first`.
  RequestState& Add(int64_t len, int32_t max_new = 32, int32_t n = 1, int32_t first = 0) {
    GenerationRequest r;
    r.prompt.resize(len);
    std::iota(r.prompt.begin(), r.prompt.end(), first);
    r.stop.max_new_tokens = max_new;
    r.n = n;
    requests_.push_back(MakeRequestState(
        requests_.size() + 1, std::move(r), [](GenerationEvent&&) { return true; }, 1, {},
        nullptr));
    for (auto& s : requests_.back()->choices) waiting_.push_back(s.get());
    return *requests_.back();
  }
  // Schedules one step and plays the forward pass: computed tokens advance, a finished chunk
  // samples token 7.
  const StepPlan& Step() {
    scheduler_->Schedule(running_, waiting_, plan_);
    for (const ScheduledChunk& c : plan_.chunks) {
      Sequence& s = *c.seq;
      s.num_computed += c.num_tokens;
      kv_->Commit(s.blocks, s.tokens, s.num_computed);
      if (s.num_computed == static_cast<int64_t>(s.tokens.size())) {
        s.tokens.push_back(7);
        ++s.generated;
      }
    }
    return plan_;
  }
  int64_t Chunk(const Sequence* s) const {
    for (const ScheduledChunk& c : plan_.chunks) {
      if (c.seq == s) return c.num_tokens;
    }
    return 0;
  }

  std::unique_ptr<KvCacheManager> kv_;
  std::unique_ptr<Scheduler> scheduler_;
  std::vector<std::unique_ptr<RequestState>> requests_;
  std::vector<Sequence*> running_;
  std::deque<Sequence*> waiting_;
  StepPlan plan_;
};

TEST_F(SchedulerTest, DecodesFirstThenPrefillChunksUnderTheBudget) {
  Init(64, 8, 8);
  Sequence* a = Add(3).choices[0].get();
  Sequence* b = Add(2).choices[0].get();
  Step();  // both prompts (5 tokens) fit
  EXPECT_EQ(plan_.num_tokens, 5);
  Sequence* c = Add(20).choices[0].get();
  Step();  // 2 decodes + 6 tokens of c's prompt
  EXPECT_EQ(Chunk(a), 1);
  EXPECT_EQ(Chunk(b), 1);
  EXPECT_EQ(Chunk(c), 6);
  EXPECT_EQ(plan_.chunks.back().seq, c);
  Step();
  EXPECT_EQ(Chunk(c), 6);
  Step();
  Step();  // 2 left of c's prompt
  EXPECT_EQ(Chunk(c), 2);
  EXPECT_EQ(c->generated, 1);
  EXPECT_EQ(plan_.num_tokens, 4);
}

TEST_F(SchedulerTest, MaxBatchSizeCapsRunningSequences) {
  Init(64, 2, 100);
  for (int i = 0; i < 4; ++i) Add(3);
  Step();
  EXPECT_EQ(running_.size(), 2u);
  EXPECT_EQ(waiting_.size(), 2u);
}

TEST_F(SchedulerTest, PreemptsTheNewestBackToTheFrontOfTheQueue) {
  Init(6, 8, 100);  // 24 tokens
  Sequence* a = Add(8, 32, 1, 0).choices[0].get();
  Sequence* b = Add(8, 32, 1, 100).choices[0].get();
  Sequence* c = Add(7, 32, 1, 200).choices[0].get();  // 2+2+2 blocks: the pool is full
  Sequence* d = Add(1, 32, 1, 300).choices[0].get();
  Step();
  EXPECT_EQ(running_.size(), 3u);
  EXPECT_EQ(waiting_.front(), d);
  // a and b each need a third block: c, the newest, gives its blocks back.
  Step();
  EXPECT_EQ(plan_.preempted, (std::vector<Sequence*>{c}));
  EXPECT_EQ(running_, (std::vector<Sequence*>{a, b}));
  EXPECT_EQ(waiting_.front(), c);  // ahead of d, which came later
  EXPECT_EQ(c->num_computed, 0);
  EXPECT_TRUE(c->blocks.blocks.empty());
  EXPECT_EQ(Chunk(a), 1);
  EXPECT_EQ(Chunk(b), 1);
  EXPECT_TRUE(plan_.unfittable.empty());
}

TEST_F(SchedulerTest, StrictFifoTheHeadBlocksTheQueue) {
  Init(6, 8, 100);
  Add(16);                                    // 4 blocks
  Sequence* big = Add(12).choices[0].get();   // needs 3: does not fit now
  Sequence* small = Add(1).choices[0].get();  // would fit
  Step();
  EXPECT_EQ(waiting_.front(), big);
  EXPECT_EQ(waiting_.back(), small);
  EXPECT_EQ(running_.size(), 1u);
}

TEST_F(SchedulerTest, ALoneSequenceThatCannotGrowIsUnfittable) {
  Init(2, 8, 100);
  Sequence* a = Add(8).choices[0].get();
  Step();  // 8 tokens in 2 blocks; its first decode needs a third
  Step();
  EXPECT_EQ(plan_.unfittable, (std::vector<Sequence*>{a}));
  EXPECT_TRUE(running_.empty());
  EXPECT_EQ(kv_->num_used_blocks(), 0);
}

TEST_F(SchedulerTest, SiblingChoicesWaitForThePromptThenHitTheCache) {
  Init(64, 8, 8);
  RequestState& r = Add(17, 32, 3);
  Step();  // choice 0 prefills 8 tokens; the siblings wait (strict FIFO behind the gate)
  EXPECT_EQ(running_.size(), 1u);
  Step();
  EXPECT_EQ(running_.size(), 1u);
  Step();  // choice 0's last prompt token; the siblings are still gated this step
  EXPECT_EQ(running_.size(), 1u);
  Step();  // now both siblings reuse 4 cached blocks and compute only the last token
  EXPECT_EQ(running_.size(), 3u);
  EXPECT_EQ(kv_->prefix_hits(), 8);
  EXPECT_EQ(Chunk(r.choices[1].get()), 1);
  EXPECT_EQ(Chunk(r.choices[2].get()), 1);
}

}  // namespace
}  // namespace kiln
