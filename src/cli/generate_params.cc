#include "cli/generate_params.h"

#include <nlohmann/json.hpp>
#include <utility>

#include "util/error.h"

namespace kiln {

void AddGenerateParamFlags(CLI::App& cmd, GenerateParams& p) {
  cmd.add_option("--max-new-tokens", p.max_new_tokens, "Tokens to generate")->capture_default_str();
  cmd.add_flag("--do-sample", p.do_sample,
               "Sample (default: greedy unless a sampling flag below is given)");
  cmd.add_option("--temperature", p.temperature,
                 "Softmax temperature; != 1 turns sampling on, 0 means greedy")
      ->capture_default_str();
  cmd.add_option("--top-k", p.top_k, "Keep the k most likely tokens (0: off)")
      ->capture_default_str();
  cmd.add_option("--top-p", p.top_p,
                 "Nucleus sampling: keep the smallest set of mass >= p (1: off)")
      ->capture_default_str();
  cmd.add_option("--typical-p", p.typical_p, "Locally typical sampling mass (1: off)")
      ->capture_default_str();
  cmd.add_option("--min-p", p.min_p, "Drop tokens below min-p x the top probability (0: off)")
      ->capture_default_str();
  cmd.add_option("--repetition-penalty", p.repetition_penalty,
                 "Divide positive (multiply negative) logits of seen tokens (1: off)")
      ->capture_default_str();
  cmd.add_option("--frequency-penalty", p.frequency_penalty,
                 "Subtract this x the token's count in the output (0: off)")
      ->capture_default_str();
  cmd.add_option("--presence-penalty", p.presence_penalty,
                 "Subtract this from tokens already in the output (0: off)")
      ->capture_default_str();
  cmd.add_option("--seed", p.seed,
                 "RNG seed: the same seed gives the same tokens, alone or batched");
  cmd.add_option("--stop", p.stop, "Stop sequence (repeatable); the text ends before it")
      ->allow_extra_args(false);  // one value per --stop
  cmd.add_flag("--ignore-eos", p.ignore_eos, "Do not stop at end-of-sequence tokens");
  cmd.add_option("--min-new-tokens", p.min_new_tokens,
                 "Generate at least this many tokens before any stop applies")
      ->capture_default_str();
  cmd.add_option("--top-n-tokens", p.top_n_tokens,
                 "With --details: this many most likely alternatives per token")
      ->capture_default_str();
  cmd.add_flag("--details", p.details,
               "Print JSON: prompt token ids, then per token its id, text and logprob");
}

namespace {

template <typename T>
void Read(const nlohmann::json& line, const char* key, T& out) {
  auto it = line.find(key);
  if (it == line.end() || it->is_null()) return;
  try {
    out = it->get<T>();
  } catch (const nlohmann::json::exception&) {
    throw Error(std::string("--batch: field `") + key + "` has the wrong type: " + it->dump());
  }
}

}  // namespace

void ApplyJsonParams(const nlohmann::json& line, GenerateParams& p) {
  Read(line, "max_new_tokens", p.max_new_tokens);
  Read(line, "do_sample", p.do_sample);
  Read(line, "temperature", p.temperature);
  Read(line, "top_k", p.top_k);
  Read(line, "top_p", p.top_p);
  Read(line, "typical_p", p.typical_p);
  Read(line, "min_p", p.min_p);
  Read(line, "repetition_penalty", p.repetition_penalty);
  Read(line, "frequency_penalty", p.frequency_penalty);
  Read(line, "presence_penalty", p.presence_penalty);
  uint64_t seed = 0;
  if (line.contains("seed") && !line["seed"].is_null()) {
    Read(line, "seed", seed);
    p.seed = seed;
  }
  if (line.contains("stop") && line["stop"].is_string()) {
    p.stop = {line["stop"].get<std::string>()};
  } else {
    Read(line, "stop", p.stop);
  }
  Read(line, "ignore_eos", p.ignore_eos);
  Read(line, "min_new_tokens", p.min_new_tokens);
  Read(line, "top_n_tokens", p.top_n_tokens);
}

GenerationRequest MakeRequest(const GenerateParams& p, std::vector<int32_t> prompt,
                              const std::vector<int64_t>& eos_ids) {
  GenerationRequest r;
  r.prompt = std::move(prompt);
  SamplingParams& s = r.sampling;
  s.do_sample = p.do_sample || p.temperature != 1.0f || p.top_k > 0 || p.top_p < 1.0f ||
                p.typical_p < 1.0f || p.min_p > 0.0f;
  if (p.temperature == 0.0f) s.do_sample = false;
  s.temperature = p.temperature == 0.0f ? 1.0f : p.temperature;
  s.top_k = p.top_k;
  s.top_p = p.top_p;
  s.typical_p = p.typical_p;
  s.min_p = p.min_p;
  s.repetition_penalty = p.repetition_penalty;
  s.frequency_penalty = p.frequency_penalty;
  s.presence_penalty = p.presence_penalty;
  s.seed = p.seed;
  StopParams& stop = r.stop;
  stop.max_new_tokens = p.max_new_tokens;
  stop.min_tokens = p.min_new_tokens;
  stop.stop_sequences = p.stop;
  stop.ignore_eos = p.ignore_eos;
  if (!p.ignore_eos) {
    for (int64_t id : eos_ids) stop.stop_token_ids.push_back(static_cast<int32_t>(id));
  }
  r.logprobs = p.details;
  r.top_n_tokens = p.details ? p.top_n_tokens : 0;
  return r;
}

}  // namespace kiln
