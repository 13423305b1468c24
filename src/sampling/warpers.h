// Sampling warpers over a candidate list, in transformers' order: temperature (applied when the
// list is filled), top-k, top-p, min-p, typical-p. Each keeps at least one token
// (min_tokens_to_keep = 1) and returns how many of the leading candidates survive; the list may
// be reordered. Weights are unnormalized probabilities exp(logit - max), so no warper needs the
// whole vocabulary sorted: top-k is a selection, top-p a growing partial sort.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace kiln {

struct Candidate {
  float logit = 0.0f;   // after temperature
  float weight = 0.0f;  // exp(logit - max logit of the list)
  float key = 0.0f;     // typical-p's sort key
  int32_t id = 0;
};

// transformers' TopKLogitsWarper keeps every logit >= the k-th largest (ties included). This is
// that threshold over a raw row, found with a k-entry min-heap in one pass (about k ln(n/k)
// heap updates on a typical row), so candidates are built only for the survivors. -inf when
// k <= 0 or k >= n. Temperature is monotonic: the threshold of the raw row selects the same set.
float TopKThreshold(const float* logits, int64_t n, int32_t k, std::vector<float>& heap);

// Fills weights; returns their sum.
double ComputeWeights(std::span<Candidate> c);
double SumWeights(std::span<const Candidate> c);

// transformers' TopPLogitsWarper: the most likely tokens, in descending order, while the mass
// before each is < top_p (so the kept mass is the smallest reaching top_p).
size_t TopP(std::span<Candidate> c, double total, float top_p);

// transformers' MinPLogitsWarper: drops tokens with probability < min_p * max probability.
size_t MinP(std::span<Candidate> c, float min_p);

// transformers' TypicalLogitsWarper (Meister et al. 2022): sorts by |-log p - entropy| and keeps
// the closest tokens until their mass reaches `mass`.
size_t TypicalP(std::span<Candidate> c, double total, float mass);

}  // namespace kiln
