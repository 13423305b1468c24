// One engine step: schedule, build the ragged batch, run the model, turn logits into tokens.
#include <algorithm>
#include <chrono>
#include <exception>

#include "engine/engine_impl.h"
#include "util/error.h"
#include "util/log.h"

namespace kiln {

void Engine::Impl::Step() {
  ProposeDrafts();
  scheduler_.Schedule(running_, waiting_, plan_);
  preemptions_ += static_cast<int64_t>(plan_.preempted.size());
  for (Sequence* s : plan_.unfittable) {
    Finish(*s, FinishReason::kError, "the sequence does not fit in the KV cache");
  }
  if (plan_.chunks.empty()) {
    // Nothing runs and the queue head cannot start on an empty pool: it never will. (Submit's
    // limits rule this out; failing it keeps the loop from spinning if they are ever wrong.)
    if (running_.empty() && plan_.unfittable.empty() && !waiting_.empty()) {
      Finish(*waiting_.front(), FinishReason::kError, "the request does not fit in the KV cache");
    }
    Reap();
    return;
  }
  BuildBatch();
  // The step's cost by its size, sampling included (a verified draft samples every row).
  const auto start = std::chrono::steady_clock::now();
  if (RunForward()) {
    ProcessOutputs();
    step_cost_.Observe(
        static_cast<int64_t>(batch_.tokens.size()),
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  ++steps_;
  Reap();
}

void Engine::Impl::BuildBatch() {
  const size_t n = plan_.chunks.size();
  // Keep the block_table buffers of dropped entries for later steps: no allocation per step.
  while (batch_.seqs.size() > n) {
    spare_tables_.push_back(std::move(batch_.seqs.back().block_table));
    batch_.seqs.pop_back();
  }
  while (batch_.seqs.size() < n) {
    batch_.seqs.emplace_back();
    if (!spare_tables_.empty()) {
      batch_.seqs.back().block_table = std::move(spare_tables_.back());
      spare_tables_.pop_back();
    }
  }
  batch_.tokens.clear();
  int64_t rows = 0;
  for (size_t i = 0; i < n; ++i) {
    const ScheduledChunk& c = plan_.chunks[i];
    const Sequence& s = *c.seq;
    BatchSequence& b = batch_.seqs[i];
    b.token_begin = static_cast<int64_t>(batch_.tokens.size());
    b.token_count = c.num_tokens + c.num_draft;
    b.start_pos = s.num_computed;
    b.block_table.assign(s.blocks.blocks.begin(), s.blocks.blocks.end());
    b.want_logits = s.num_computed + c.num_tokens == static_cast<int64_t>(s.tokens.size());
    b.num_logits = static_cast<int32_t>(1 + c.num_draft);
    auto first = s.tokens.begin() + s.num_computed;
    batch_.tokens.insert(batch_.tokens.end(), first, first + c.num_tokens);
    batch_.tokens.insert(batch_.tokens.end(), s.draft.begin(), s.draft.begin() + c.num_draft);
    if (b.want_logits) rows += b.num_logits;
  }
  if (static_cast<int64_t>(logits_.size()) < rows * vocab_) logits_.resize(rows * vocab_);
}

bool Engine::Impl::RunForward() {
  std::string error;
  try {
    runner_->Forward(batch_, logits_.data());
    return true;
  } catch (const std::exception& e) {
    error = e.what();
  } catch (...) {
    error = "unknown error in the model's forward pass";
  }
  log::Error(
      StrCat("engine: forward pass failed for ", plan_.chunks.size(), " sequences: ", error));
  // The KV those sequences were writing is suspect: they end, their blocks go back unregistered.
  for (const ScheduledChunk& c : plan_.chunks) Finish(*c.seq, FinishReason::kError, error);
  return false;
}

void Engine::Impl::ProcessOutputs() {
  float* row = logits_.data();
  for (size_t i = 0; i < plan_.chunks.size(); ++i) {
    const ScheduledChunk& c = plan_.chunks[i];
    Sequence& s = *c.seq;
    const BatchSequence& b = batch_.seqs[i];
    // A sibling's client may have gone away earlier in this loop; its rows are skipped.
    if (s.state == SequenceState::kRunning) {
      s.num_computed += c.num_tokens;
      if (c.num_draft > 0) {
        VerifyDraft(s, c.num_draft, row);
      } else {
        kv_.Commit(s.blocks, s.tokens, s.num_computed);
        if (b.want_logits) EmitToken(s, row);
        // Blocks a draft model reserved for a draft the step then dropped.
        if (draft_ != nullptr && s.state == SequenceState::kRunning) {
          kv_.Truncate(s.blocks, static_cast<int64_t>(s.tokens.size()));
        }
      }
    }
    if (b.want_logits) row += b.num_logits * vocab_;
  }
}

void Engine::Impl::Reap() {
  auto finished = [](const Sequence* s) { return s->state == SequenceState::kFinished; };
  std::erase_if(running_, finished);
  std::erase_if(waiting_, finished);
  for (RequestId id : done_) requests_.erase(id);
  done_.clear();
}

}  // namespace kiln
