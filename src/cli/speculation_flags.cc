#include "cli/speculation_flags.h"

#include "cli/default_model.h"
#include "engine/model_runner_impl.h"
#include "model/model.h"
#include "model/paged_kv_cache.h"
#include "util/error.h"
#include "util/log.h"

namespace kiln {

void AddSpeculationFlags(CLI::App* cmd, SpeculationOptions& o) {
  SpeculationConfig& c = o.config;
  cmd->add_option("--speculate", c.max_draft,
                  "Speculative decoding: tokens drafted per sequence and step by n-gram "
                  "(prompt lookup) matching, verified in one forward; outputs are unchanged. "
                  "0: off")
      ->envname("SPECULATE")
      ->capture_default_str();
  cmd->add_option("--speculate-ngram", c.ngram.max_ngram,
                  "Longest suffix (tokens) looked up in the history for a draft; shorter ones "
                  "down to 1 are tried next")
      ->capture_default_str();
  cmd->add_option("--speculate-max-step-tokens", c.max_step_tokens,
                  "Most tokens in a step with drafts (decodes, prefill chunks and drafts). "
                  "Below it, drafts are trimmed to what pays by the step times the engine "
                  "measures, so large batches stop speculating by themselves")
      ->capture_default_str();
  cmd->add_flag("--speculate-all-drafts", c.all_drafts,
                "Verify every proposed draft (up to --speculate-max-step-tokens) instead of "
                "only those the measured step costs say pay (for tests and measurements)");
  cmd->add_option("--draft-model", o.draft_model,
                  "A smaller model with the same tokenizer (GGUF, folder, artifact or Hub id) "
                  "whose greedy tokens are the drafts, instead of n-gram lookup; it runs on "
                  "the same cores (implies --speculate 4 unless given)");
}

void CheckSpeculationFlags(SpeculationOptions& o) {
  SpeculationConfig& c = o.config;
  if (!o.draft_model.empty() && c.max_draft == 0) c.max_draft = kDraftModelSpeculate;
  KILN_CHECK(c.max_draft >= 0 && c.max_draft <= kMaxSpeculate, "--speculate must be in 0..",
             kMaxSpeculate, ", not ", c.max_draft);
  KILN_CHECK(c.ngram.max_ngram >= 1 && c.ngram.max_ngram <= 32,
             "--speculate-ngram must be in 1..32, not ", c.ngram.max_ngram);
  KILN_CHECK(c.max_step_tokens >= 1, "--speculate-max-step-tokens must be >= 1, not ",
             c.max_step_tokens);
}

std::unique_ptr<ModelRunner> LoadDraftRunner(const SpeculationOptions& o, const ModelRunner& target,
                                             std::unique_ptr<Model>& holder) {
  if (o.draft_model.empty()) return nullptr;
  const std::string path = ResolveModelId(o.draft_model);
  log::Info("loading the draft model " + path);
  holder = Model::Load(path);
  return MakeDraftRunner(*holder, target, AutoKvCacheDType(holder->attention_weight_dtype()));
}

}  // namespace kiln
