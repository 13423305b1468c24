// What a forward step costs by its size: an exponential moving average of the measured seconds
// per token count (1 .. kMaxTokens), so speculation can ask what k more rows would cost on this
// CPU, this model and these cores, instead of guessing. A CPU step is flat while reading the
// weights dominates and turns linear once the rows' arithmetic does; where that happens depends
// on the kernels, the core count and the model (SmolLM2-135M Q4_1 on one Zen 4 core: 4.7 ms at
// 1 row, 5.4 at 4, 7.6 at 5, 10.3 at 8).
#pragma once

#include <cstdint>
#include <functional>
#include <utility>
#include <vector>

namespace kiln {

class StepCost {
 public:
  static constexpr int64_t kMaxTokens = 512;

  StepCost();
  // Tests: every observation records fixed(tokens) instead of the measured seconds, so
  // decisions made from the costs do not depend on the machine's load.
  void set_fixed(std::function<double(int64_t tokens)> fixed) { fixed_ = std::move(fixed); }
  void Observe(int64_t tokens, double seconds);
  // Seconds for a step of `tokens`: the average where measured; between two measured sizes,
  // linear between them; past the largest, proportional to it (pessimistic); below the smallest,
  // proportional to it (optimistic). 0 before any measurement.
  double Estimate(int64_t tokens) const;

 private:
  std::vector<double> average_;  // [kMaxTokens + 1], 0: never measured
  std::function<double(int64_t)> fixed_;
};

}  // namespace kiln
