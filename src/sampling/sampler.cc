#include "sampling/sampler.h"

#include <algorithm>
#include <limits>

#include "kernels/ops.h"
#include "sampling/philox.h"

namespace kiln {
namespace {

// The first maximum; NaN never wins (kernels::ArgMax, SIMD: vocabularies reach 150K entries).
int32_t ArgMax(const float* x, int64_t n) { return static_cast<int32_t>(kernels::ArgMax(x, n)); }

// -inf for every id whose bit is clear; whole words at a time where all 64 are allowed.
void MaskDisallowed(float* row, int64_t vocab, std::span<const uint64_t> allowed) {
  constexpr float kNegInf = -std::numeric_limits<float>::infinity();
  for (int64_t w = 0; w * 64 < vocab; ++w) {
    const uint64_t bits = w < static_cast<int64_t>(allowed.size()) ? allowed[w] : 0;
    if (bits == ~uint64_t{0}) continue;
    const int64_t end = std::min<int64_t>(vocab, (w + 1) * 64);
    for (int64_t i = w * 64; i < end; ++i) {
      if (((bits >> (i & 63)) & 1) == 0) row[i] = kNegInf;
    }
  }
}

}  // namespace

SamplingWorkspace::SamplingWorkspace(int64_t vocab_size) {
  candidates_.resize(vocab_size);
  undo_.reserve(1024);
}

Sampler::Sampler(const SamplingParams& params, uint64_t seed, uint64_t stream,
                 std::span<const int32_t> prompt)
    : p_(params),
      seed_(seed),
      stream_(stream),
      track_prompt_(params.repetition_penalty != 1.0f),
      track_generated_(track_prompt_ || params.frequency_penalty != 0.0f ||
                       params.presence_penalty != 0.0f) {
  if (track_prompt_) {
    for (int32_t t : prompt) counts_.AddPrompt(t);
  }
}

void Sampler::Accept(int32_t token) {
  if (track_generated_) counts_.AddGenerated(token);
  ++index_;
}

void Sampler::ApplyProcessors(float* logits, std::span<const int32_t> suppress,
                              LogitsUndo& undo) const {
  ApplyLogitBias(logits, p_.logit_bias, undo);
  if (p_.repetition_penalty != 1.0f) {
    ApplyRepetitionPenalty(logits, counts_, p_.repetition_penalty, undo);
  }
  if (p_.frequency_penalty != 0.0f || p_.presence_penalty != 0.0f) {
    ApplyFrequencyPresencePenalty(logits, counts_, p_.frequency_penalty, p_.presence_penalty, undo);
  }
  SuppressTokens(logits, suppress, undo);
}

void Sampler::Sample(float* logits, int64_t vocab, const SampleOptions& options,
                     SamplingWorkspace& ws, SampleResult& result) const {
  float lse = 0.0f;
  if (options.logprob || options.top_n > 0) lse = LogSumExp(logits, vocab);
  if (options.top_n > 0 && result.top != nullptr) {
    TopLogprobs(logits, vocab, lse, options.top_n, *result.top);
  }
  // Under a constraint the row is copied once and masked (the caller's row stays as it was:
  // cheaper than undoing tens of thousands of -inf writes).
  float* row = logits;
  if (!options.allowed.empty()) {
    ws.masked_.assign(logits, logits + vocab);
    row = ws.masked_.data();
    MaskDisallowed(row, vocab, options.allowed);
  }
  ApplyProcessors(row, options.suppress, ws.undo_);
  result.token = p_.do_sample ? Draw(row, vocab, ws) : ArgMax(row, vocab);
  RestoreLogits(row, ws.undo_);
  result.logprob = options.logprob ? logits[result.token] - lse : 0.0f;
}

int32_t Sampler::Draw(const float* logits, int64_t vocab, SamplingWorkspace& ws) const {
  Candidate* c = ws.candidates_.data();
  const float threshold = TopKThreshold(logits, vocab, p_.top_k, ws.heap_);
  size_t n = 0;
  for (int64_t i = 0; i < vocab; ++i) {
    // Below the top-k threshold, NaN, or -inf (banned: probability 0 in every warper).
    if (!(logits[i] >= threshold) || logits[i] == -std::numeric_limits<float>::infinity()) {
      continue;
    }
    c[n++] = {logits[i] / p_.temperature, 0.0f, 0.0f, static_cast<int32_t>(i)};
  }
  if (n == 0) return ArgMax(logits, vocab);
  double total = ComputeWeights({c, n});
  if (p_.top_p < 1.0f) {
    n = TopP({c, n}, total, p_.top_p);
    total = SumWeights({c, n});
  }
  if (p_.min_p > 0.0f) {
    n = MinP({c, n}, p_.min_p);
    total = SumWeights({c, n});
  }
  if (p_.typical_p < 1.0f) {
    n = TypicalP({c, n}, total, p_.typical_p);
    total = SumWeights({c, n});
  }
  const double u = PhiloxUniform(seed_, stream_, index_) * total;
  double acc = 0;
  for (size_t i = 0; i < n; ++i) {
    acc += c[i].weight;
    if (u < acc) return c[i].id;
  }
  for (size_t i = n; i-- > 0;) {  // rounding left u at the very top: last token with mass
    if (c[i].weight > 0) return c[i].id;
  }
  return c[0].id;
}

}  // namespace kiln
