// The per-request parameters of `kiln generate`: defaults from the command-line flags, which a
// `--batch` JSONL line may override with fields of the same names (underscores for dashes).
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <vector>

#include "engine/request.h"

namespace kiln {

struct GenerateParams {
  int32_t max_new_tokens = 64;
  bool do_sample = false;
  // Sampling is on when do_sample is set or any warper below differs from its "off" value;
  // temperature 0 means greedy (as in OpenAI's API).
  float temperature = 1.0f;
  int32_t top_k = 0;
  float top_p = 1.0f;
  float typical_p = 1.0f;
  float min_p = 0.0f;
  float repetition_penalty = 1.0f;
  float frequency_penalty = 0.0f;
  float presence_penalty = 0.0f;
  std::optional<uint64_t> seed;
  std::vector<std::string> stop;
  bool ignore_eos = false;
  int32_t min_new_tokens = 0;
  int32_t top_n_tokens = 0;
  bool details = false;
};

// Registers --max-new-tokens, --do-sample, --temperature, ... --top-n-tokens on `cmd`.
void AddGenerateParamFlags(CLI::App& cmd, GenerateParams& p);

// Overrides fields of `p` from a --batch line's object; unknown keys are left to the caller.
// Throws kiln::Error naming the field on a wrong type.
void ApplyJsonParams(const nlohmann::json& line, GenerateParams& p);

// The engine request for `prompt`; `eos_ids` (the model config's) stop unless ignore_eos.
GenerationRequest MakeRequest(const GenerateParams& p, std::vector<int32_t> prompt,
                              const std::vector<int64_t>& eos_ids);

}  // namespace kiln
