// RoPE inverse frequencies per rotary pair, with the config's scaling folded in.
#pragma once

#include <vector>

#include "model/config.h"

namespace kiln {

// inv_freq[i] for i in [0, head_dim/2), in float32 as transformers computes them.
// `freq_factors` (GGUF rope_freqs.weight, llama3 files) divide the base frequencies when given.
std::vector<float> ComputeRopeInvFreq(const ModelConfig& config,
                                      const std::vector<float>* freq_factors = nullptr);

}  // namespace kiln
