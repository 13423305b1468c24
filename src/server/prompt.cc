#include "server/prompt.h"

#include <algorithm>

#include "api/api_error.h"
#include "api/token_budget.h"
#include "util/error.h"

namespace kiln {

std::vector<int32_t> EncodePrompt(const Tokenizer& tokenizer, std::string_view text) {
  std::vector<int32_t> ids = tokenizer.Encode(text, /*add_special=*/true, /*parse_special=*/true);
  const int32_t bos = tokenizer.bos_id();
  if (bos >= 0 && ids.size() >= 2 && ids[0] == bos && ids[1] == bos) ids.erase(ids.begin());
  if (ids.empty()) throw api::ValidationError("`inputs` cannot be empty", "inputs");
  return ids;
}

void Truncate(std::vector<int32_t>& ids, const api::GenerationOptions& options) {
  if (!options.truncate) return;
  const size_t keep = static_cast<size_t>(*options.truncate);
  if (ids.size() > keep) ids.erase(ids.begin(), ids.end() - static_cast<std::ptrdiff_t>(keep));
}

void CheckTokenIds(std::span<const int32_t> ids, int64_t vocab_size, std::string_view what) {
  for (int32_t id : ids) {
    if (id < 0 || id >= vocab_size) {
      throw api::ValidationError(StrCat("`", std::string(what), "` holds token id ", id,
                                        ", outside the vocabulary of ", vocab_size, " tokens"),
                                 std::string(what));
    }
  }
}

GenerationRequest MakeEngineRequest(const api::GenerationOptions& o, std::vector<int32_t> prompt,
                                    const api::ValidationLimits& limits) {
  GenerationRequest r;
  const int64_t input_tokens = static_cast<int64_t>(prompt.size());
  r.stop.max_new_tokens = api::ResolveMaxNewTokens(input_tokens, o.max_new_tokens, limits);
  r.prompt = std::move(prompt);
  r.sampling.do_sample = o.do_sample;
  r.sampling.temperature = o.temperature;
  r.sampling.top_k = o.top_k;
  r.sampling.top_p = o.top_p;
  r.sampling.typical_p = o.typical_p;
  r.sampling.min_p = o.min_p;
  r.sampling.repetition_penalty = o.repetition_penalty;
  r.sampling.frequency_penalty = o.frequency_penalty;
  r.sampling.presence_penalty = o.presence_penalty;
  r.sampling.logit_bias = o.logit_bias;
  r.sampling.seed = o.seed;
  r.stop.min_tokens = std::min(o.min_tokens, r.stop.max_new_tokens);
  r.stop.stop_sequences = o.stop;
  r.stop.stop_token_ids = o.stop_token_ids;
  r.stop.ignore_eos = o.ignore_eos;
  r.logprobs = o.logprobs;
  r.top_n_tokens = o.top_n_tokens;
  r.n = o.n;
  r.skip_special_tokens = o.skip_special_tokens;
  return r;
}

}  // namespace kiln
