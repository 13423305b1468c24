#include "engine/draft_model.h"

#include <algorithm>
#include <chrono>

#include "kernels/ops.h"
#include "util/error.h"

namespace kiln {

DraftModel::DraftModel(std::unique_ptr<ModelRunner> runner) : runner_(std::move(runner)) {
  KILN_CHECK(runner_ != nullptr, "a draft model needs a runner");
}

void DraftModel::Propose(std::vector<DraftJob>& jobs, StepCost& cost) {
  // Round 0: every job's unseen tokens; the last one's logits give draft[0].
  batch_.tokens.clear();
  batch_.seqs.clear();
  rows_.clear();
  for (size_t i = 0; i < jobs.size(); ++i) {
    DraftJob& j = jobs[i];
    j.draft->clear();
    const int64_t size = static_cast<int64_t>(j.tokens.size());
    *j.computed = std::min(*j.computed, size - 1);
    const int64_t n = std::min(size - *j.computed, kMaxCatchUp);
    BatchSequence& b = batch_.seqs.emplace_back();
    b.token_begin = static_cast<int64_t>(batch_.tokens.size());
    b.token_count = n;
    b.start_pos = *j.computed;
    b.block_table.assign(j.blocks.begin(), j.blocks.end());
    b.want_logits = *j.computed + n == size;
    batch_.tokens.insert(batch_.tokens.end(), j.tokens.begin() + *j.computed,
                         j.tokens.begin() + *j.computed + n);
    *j.computed += n;
    if (b.want_logits) rows_.push_back(i);
  }
  if (batch_.seqs.empty()) return;
  RunAndTakeArgmax(jobs, cost);
  // Rounds 1..k-1: each still-drafting job feeds its newest draft token.
  for (int32_t round = 1;; ++round) {
    batch_.tokens.clear();
    batch_.seqs.clear();
    rows_.clear();
    for (size_t i = 0; i < jobs.size(); ++i) {
      DraftJob& j = jobs[i];
      if (j.draft->empty() || static_cast<int32_t>(j.draft->size()) >= j.k) continue;
      BatchSequence& b = batch_.seqs.emplace_back();
      b.token_begin = static_cast<int64_t>(batch_.tokens.size());
      b.token_count = 1;
      b.start_pos = static_cast<int64_t>(j.tokens.size()) + round - 1;
      b.block_table.assign(j.blocks.begin(), j.blocks.end());
      batch_.tokens.push_back(j.draft->back());
      rows_.push_back(i);
    }
    if (batch_.seqs.empty()) return;
    RunAndTakeArgmax(jobs, cost);
  }
}

void DraftModel::RunAndTakeArgmax(std::vector<DraftJob>& jobs, StepCost& cost) {
  const int64_t vocab = runner_->vocab_size();
  const size_t need = rows_.size() * static_cast<size_t>(vocab);
  if (logits_.size() < need) logits_.resize(need);
  const auto start = std::chrono::steady_clock::now();
  runner_->Forward(batch_, logits_.data());
  for (size_t r = 0; r < rows_.size(); ++r) {
    const float* row = logits_.data() + r * static_cast<size_t>(vocab);
    jobs[rows_[r]].draft->push_back(static_cast<int32_t>(kernels::ArgMax(row, vocab)));
  }
  cost.Observe(static_cast<int64_t>(batch_.tokens.size()),
               std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
}

}  // namespace kiln
