// Drafting with a smaller model that shares the target's tokenizer (e.g. SmolLM2-135M for a
// SmolLM2-1.7B target): the draft's own KV rows live at the same (block, row) places as the
// target's, through the target's block tables, in a KV pool of its own (MakeDraftRunner). Each
// step it catches up on the tokens it has not seen (the last sampled one, those accepted last
// step, or a whole prompt), then runs k greedy single-token steps, every sequence in one batch.
// Proposals are the draft's argmax: deterministic, so verification's "sample, keep while equal"
// rule stays exact for sampled requests too (speculation.h).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "engine/model_runner.h"
#include "engine/step_cost.h"
#include "model/batch.h"

namespace kiln {

struct DraftJob {
  std::span<const int32_t> tokens;        // the sequence's history
  std::span<const int32_t> blocks;        // its block table, covering tokens.size() + k positions
  int64_t* computed = nullptr;            // in/out: leading positions whose draft KV is written
  int32_t k = 0;                          // tokens wanted
  std::vector<int32_t>* draft = nullptr;  // out: up to k tokens (none while catching up)
};

class DraftModel {
 public:
  // At most this many catch-up tokens per sequence and step: a long prompt is caught up over
  // several steps (drafting starts when it is done) rather than stalling one step.
  static constexpr int64_t kMaxCatchUp = 512;

  explicit DraftModel(std::unique_ptr<ModelRunner> runner);
  int64_t vocab_size() const { return runner_->vocab_size(); }
  // Records every forward's time by its token count in `cost`.
  void Propose(std::vector<DraftJob>& jobs, StepCost& cost);

 private:
  // One batched forward of `batch_`; the argmax of each logits row is appended to its job's
  // draft (rows_[i] names the job).
  void RunAndTakeArgmax(std::vector<DraftJob>& jobs, StepCost& cost);

  std::unique_ptr<ModelRunner> runner_;
  Batch batch_;
  std::vector<size_t> rows_;  // job index of each logits row
  std::vector<float> logits_;
};

}  // namespace kiln
