// One sequence's token choice: logits processors, warpers and a seeded draw.
//
// Pipeline per token (logits row [vocab], raw from the model):
//   logit_bias -> repetition penalty -> frequency/presence penalty -> min_tokens stop masking
//   -> greedy argmax (do_sample = false)
//   or temperature -> top-k -> top-p -> min-p -> typical-p -> draw with Philox(seed, stream, k).
//
// Logprobs are those of the model's raw distribution, log_softmax of the logits before any
// processing, as vLLM reports by default and OpenAI documents ("log probability of this token").
// TGI instead reports log_softmax after its processors and warpers (a top-k-filtered alternative
// shows -inf there). Raw values do not depend on sampling settings, so they compare across
// requests and against transformers' scores.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "sampling/logits_processors.h"
#include "sampling/logprobs.h"
#include "sampling/params.h"
#include "sampling/token_counts.h"
#include "sampling/warpers.h"

namespace kiln {

// Scratch shared by every sequence sampled on one thread, sized to the vocabulary once.
class SamplingWorkspace {
 public:
  explicit SamplingWorkspace(int64_t vocab_size);

 private:
  friend class Sampler;
  std::vector<Candidate> candidates_;
  std::vector<float> heap_;    // top-k selection
  std::vector<float> masked_;  // the row with a constraint's mask applied
  LogitsUndo undo_;
};

struct SampleOptions {
  std::span<const int32_t> suppress;  // ids masked to -inf for this token
  // A constraint's allowed tokens, one bit per id ((vocab + 63) / 64 words, at least one bit
  // set; grammar/compiled_grammar.h); empty: every token. Applied before every processor, so
  // penalties and warpers only ever see allowed tokens; logprobs stay the raw ones.
  std::span<const uint64_t> allowed;
  bool logprob = false;  // compute SampleResult::logprob
  int32_t top_n = 0;     // alternatives wanted (into SampleResult::top)
};

struct SampleResult {
  int32_t token = -1;
  float logprob = 0.0f;
  std::vector<TokenLogprob>* top = nullptr;  // the caller's vector, filled when top_n > 0
};

class Sampler {
 public:
  // `params` must outlive the sampler. `stream` separates the choices of one request (n > 1).
  Sampler(const SamplingParams& params, uint64_t seed, uint64_t stream,
          std::span<const int32_t> prompt);

  // `logits` is used as scratch and restored before returning.
  void Sample(float* logits, int64_t vocab, const SampleOptions& options, SamplingWorkspace& ws,
              SampleResult& result) const;
  // Records the token the sequence took: penalty counts, and the next draw uses index + 1.
  void Accept(int32_t token);

  uint64_t seed() const { return seed_; }
  uint64_t num_sampled() const { return index_; }

 private:
  void ApplyProcessors(float* logits, std::span<const int32_t> suppress, LogitsUndo& undo) const;
  int32_t Draw(const float* logits, int64_t vocab, SamplingWorkspace& ws) const;

  const SamplingParams& p_;
  uint64_t seed_, stream_;
  uint64_t index_ = 0;
  bool track_prompt_, track_generated_;
  TokenCounts counts_;
};

}  // namespace kiln
