// Speculative decoding flags of kiln serve and kiln generate, in TGI's naming where it has one:
// --speculate N (env SPECULATE; n-gram / prompt-lookup drafting, as TGI does without Medusa
// heads), plus --speculate-ngram (longest n-gram matched) and --speculate-max-step-tokens (a
// hard cap on a step with drafts; below it the engine's cost model decides), and --draft-model
// (a smaller model with the same tokenizer drafts instead of n-gram lookup).
#pragma once

#include <CLI/CLI.hpp>
#include <memory>
#include <string>

#include "engine/model_runner.h"
#include "engine/speculation.h"

namespace kiln {

class Model;

inline constexpr int32_t kMaxSpeculate = 16;
inline constexpr int32_t kDraftModelSpeculate = 4;  // --speculate when only --draft-model is set

struct SpeculationOptions {
  SpeculationConfig config;
  std::string draft_model;  // path or Hub id; empty: n-gram drafts
};

void AddSpeculationFlags(CLI::App* cmd, SpeculationOptions& o);
// Range checks (kiln::Error naming the flag); --draft-model alone turns --speculate on.
void CheckSpeculationFlags(SpeculationOptions& o);
// The draft model's runner beside `target` (MakeDraftRunner), its model loaded into `holder`,
// which must outlive the engine; nullptr without --draft-model.
std::unique_ptr<ModelRunner> LoadDraftRunner(const SpeculationOptions& o, const ModelRunner& target,
                                             std::unique_ptr<Model>& holder);

}  // namespace kiln
