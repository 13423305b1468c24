// A ModelRunner without a model: its "KV cache" stores the token id written at each position,
// and its logits are a deterministic function of the sequence's full history as read back from
// those blocks. So outputs depend on the scheduler handing out correct block tables (a wrong
// prefix-cache hit, a block reused while still held, a missed position all change the tokens),
// and every Batch is checked against the engine's limits.
#pragma once

#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <span>
#include <stdexcept>
#include <vector>

#include "engine/model_runner.h"

namespace kiln::testing {

struct FakeRunnerOptions {
  int64_t vocab = 64;
  int64_t block_size = 4;
  int64_t num_blocks = 512;
  int64_t max_context = 4096;
  int64_t max_batch_tokens = 0;  // checked when > 0
  int64_t max_batch_size = 0;    // checked when > 0
};

// What a test sees of the runner after the engine took ownership. Hooks run on the engine
// thread inside Forward (before it computes).
struct FakeRunnerProbe {
  std::atomic<int64_t> steps{0}, violations{0}, max_tokens{0}, max_seqs{0};
  std::atomic<int64_t> throw_at_step{-1};
  // firsts: the first history token of each sequence in the batch (identifies prompts).
  std::function<void(int64_t step, const Batch&, const std::vector<int32_t>& firsts)> on_step;
  // First history token of every sequence in each step (identifies prompts), when recording.
  bool record = false;
  std::mutex mu;
  std::vector<std::vector<int32_t>> firsts;
};

inline uint64_t MixHash(uint64_t h, uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
  h *= 0xff51afd7ed558ccdull;
  return h ^ (h >> 33);
}

// The fake model: noise in [0, 1) everywhere and +4 on one "peak" token, all from the history.
// `peak` overrides which token is peaked (scripts for stop-sequence tests).
using PeakFn = std::function<int32_t(std::span<const int32_t> history)>;

inline void FakeLogits(std::span<const int32_t> history, int64_t vocab, const PeakFn& peak,
                       float* out) {
  uint64_t h = 1469598103934665603ull;
  for (int32_t t : history) h = MixHash(h, static_cast<uint32_t>(t));
  for (int64_t v = 0; v < vocab; ++v) {
    out[v] = static_cast<float>(MixHash(h, static_cast<uint64_t>(v)) >> 40) * 0x1.0p-24f;
  }
  const int64_t p = peak ? peak(history) : static_cast<int64_t>(h % static_cast<uint64_t>(vocab));
  out[p] += 4.0f;
}

class FakeModelRunner : public ModelRunner {
 public:
  FakeModelRunner(FakeRunnerOptions o, std::shared_ptr<FakeRunnerProbe> probe, PeakFn peak = {})
      : o_(o),
        probe_(std::move(probe)),
        peak_(std::move(peak)),
        kv_(o.num_blocks * o.block_size, -1) {}

  int64_t vocab_size() const override { return o_.vocab; }
  int64_t block_size() const override { return o_.block_size; }
  int64_t num_blocks() const override { return o_.num_blocks; }
  int64_t max_context() const override { return o_.max_context; }

  void Forward(const Batch& batch, float* logits) override {
    const int64_t step = probe_->steps.fetch_add(1);
    std::vector<int32_t> firsts;
    for (const BatchSequence& s : batch.seqs) {
      const bool from_kv = s.start_pos > 0 && !s.block_table.empty();
      firsts.push_back(from_kv ? kv_[Slot(s, 0)] : batch.tokens[s.token_begin]);
    }
    if (probe_->on_step) probe_->on_step(step, batch, firsts);
    if (probe_->throw_at_step.load() == step) throw std::runtime_error("fake forward failed");
    CheckBatch(batch);
    float* row = logits;
    for (const BatchSequence& s : batch.seqs) {
      history_.clear();
      for (int64_t p = 0; p < s.start_pos; ++p) {
        const int32_t t = kv_[Slot(s, p)];
        Expect(t >= 0, "read an unwritten KV row");
        history_.push_back(t);
      }
      const int64_t first_scored = s.want_logits ? s.token_count - s.num_logits : s.token_count;
      for (int64_t i = 0; i < s.token_count; ++i) {
        const int32_t t = batch.tokens[s.token_begin + i];
        kv_[Slot(s, s.start_pos + i)] = t;
        history_.push_back(t);
        if (i >= first_scored) {  // logits of the history up to and including token i
          FakeLogits(history_, o_.vocab, peak_, row);
          row += o_.vocab;
        }
      }
    }
    if (probe_->record) {
      std::lock_guard lock(probe_->mu);
      probe_->firsts.push_back(std::move(firsts));
    }
  }

 private:
  int64_t Slot(const BatchSequence& s, int64_t pos) const {
    return static_cast<int64_t>(s.block_table[pos / o_.block_size]) * o_.block_size +
           pos % o_.block_size;
  }
  void Expect(bool ok, const char* what) {
    if (ok) return;
    ++probe_->violations;
    ADD_FAILURE() << "fake runner: " << what;
  }
  void CheckBatch(const Batch& batch) {
    int64_t next = 0;
    std::set<int32_t> written;  // blocks any sequence writes this step
    for (const BatchSequence& s : batch.seqs) {
      Expect(s.token_begin == next && s.token_count > 0, "tokens not contiguous");
      next += s.token_count;
      const int64_t end = s.start_pos + s.token_count;
      Expect(end <= o_.max_context, "past max_context");
      Expect(static_cast<int64_t>(s.block_table.size()) * o_.block_size >= end,
             "block table does not cover the positions");
      for (int32_t b : s.block_table) Expect(b >= 0 && b < o_.num_blocks, "bad block id");
      if (static_cast<int64_t>(s.block_table.size()) * o_.block_size < end) return;
      for (int64_t p = s.start_pos; p < end; p += o_.block_size - p % o_.block_size) {
        Expect(written.insert(s.block_table[p / o_.block_size]).second, "block written twice");
      }
    }
    // Nobody may read (hold in its table) a block another sequence writes this step.
    for (const BatchSequence& s : batch.seqs) {
      std::set<int32_t> own;
      for (int64_t p = s.start_pos; p < s.start_pos + s.token_count; ++p) {
        own.insert(s.block_table[p / o_.block_size]);
      }
      for (int32_t b : s.block_table) {
        Expect(!written.count(b) || own.count(b), "reads a block another sequence writes");
      }
    }
    Expect(next == static_cast<int64_t>(batch.tokens.size()), "token count mismatch");
    const auto tokens = static_cast<int64_t>(batch.tokens.size());
    const auto seqs = static_cast<int64_t>(batch.seqs.size());
    if (o_.max_batch_tokens > 0) Expect(tokens <= o_.max_batch_tokens, "over the token budget");
    if (o_.max_batch_size > 0) Expect(seqs <= o_.max_batch_size, "over max_batch_size");
    if (tokens > probe_->max_tokens) probe_->max_tokens = tokens;
    if (seqs > probe_->max_seqs) probe_->max_seqs = seqs;
  }

  FakeRunnerOptions o_;
  std::shared_ptr<FakeRunnerProbe> probe_;
  PeakFn peak_;
  std::vector<int32_t> kv_;  // [num_blocks * block_size] token id per row
  std::vector<int32_t> history_;
};

}  // namespace kiln::testing
