// Speculative decoding flags of kiln serve and kiln generate, in TGI's naming where it has one:
// --speculate N (env SPECULATE; n-gram / prompt-lookup drafting, as TGI does without Medusa
// heads), plus --speculate-ngram (longest n-gram matched) and --speculate-max-step-tokens (a
// hard cap on a step with drafts; below it the engine's cost model decides).
#pragma once

#include <CLI/CLI.hpp>

#include "engine/speculation.h"

namespace kiln {

inline constexpr int32_t kMaxSpeculate = 16;

void AddSpeculationFlags(CLI::App* cmd, SpeculationConfig& c);
// Range checks (kiln::Error naming the flag).
void CheckSpeculationFlags(const SpeculationConfig& c);

}  // namespace kiln
