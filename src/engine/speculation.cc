#include "engine/speculation.h"

#include <algorithm>

namespace kiln {

namespace {

constexpr double kAcceptanceWeight = 0.3;  // of one draft's outcome in the average
constexpr double kIdleDrift = 1.0 / 32;    // per decode step without a draft, toward the prior

}  // namespace

void SpeculationState::Record(int32_t num_drafted, int32_t num_accepted) {
  drafted += num_drafted;
  const double trials = num_accepted + (num_accepted < num_drafted ? 1.0 : 0.0);
  const double observed = trials > 0 ? num_accepted / trials : acceptance;
  acceptance += kAcceptanceWeight * (observed - acceptance);
}

void SpeculationState::Idle() { acceptance += kIdleDrift * (kPrior - acceptance); }

void AllotDrafts(std::vector<DraftCandidate>& candidates, int64_t base_tokens, double base_yield,
                 int64_t max_tokens, const StepCost& cost, double round_seconds) {
  // Drafted tokens in order of expected gain: candidate c's j-th token adds acceptance^j. The
  // gains of one candidate fall with j, so merging the candidates by gain keeps each allotment a
  // prefix of its proposal.
  struct Pick {
    double gain;
    size_t candidate;
  };
  std::vector<Pick> picks;
  for (size_t c = 0; c < candidates.size(); ++c) {
    candidates[c].allotted = 0;
    double gain = 1.0;
    for (int32_t j = 0; j < candidates[c].proposed; ++j) {
      gain *= candidates[c].acceptance;
      picks.push_back({gain, c});
    }
  }
  std::stable_sort(picks.begin(), picks.end(),
                   [](const Pick& a, const Pick& b) { return a.gain > b.gain; });
  const int64_t room = std::max<int64_t>(0, max_tokens - base_tokens);
  if (static_cast<int64_t>(picks.size()) > room) picks.resize(room);
  size_t best = picks.size();  // nothing measured yet: take them all
  if (cost.Estimate(base_tokens) > 0.0) {
    double yield = base_yield, best_rate = base_yield / cost.Estimate(base_tokens);
    best = 0;
    int32_t rounds = 0;  // the longest allotment so far
    for (size_t d = 1; d <= picks.size(); ++d) {
      yield += picks[d - 1].gain;
      rounds = std::max(rounds, ++candidates[picks[d - 1].candidate].allotted);
      const double rate =
          yield / (cost.Estimate(base_tokens + static_cast<int64_t>(d)) + rounds * round_seconds);
      if (rate > best_rate) {
        best_rate = rate;
        best = d;
      }
    }
  }
  for (DraftCandidate& c : candidates) c.allotted = 0;
  for (size_t d = 0; d < best; ++d) ++candidates[picks[d].candidate].allotted;
}

void SpeculationCounters::Record(int32_t num_drafted, int32_t num_accepted) {
  ++drafts;
  draft_tokens += num_drafted;
  accepted_tokens += num_accepted;
  const double rate = static_cast<double>(num_accepted) / static_cast<double>(num_drafted);
  rate_sum += rate;
  size_t b = 0;
  while (b + 1 < kRateBounds.size() && rate > kRateBounds[b]) ++b;
  ++by_rate[b];
}

}  // namespace kiln
