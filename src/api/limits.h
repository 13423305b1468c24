// The per-request limits a server enforces, with TGI's launcher defaults (docs/source/reference/
// launcher.md). Filled from `kiln serve` flags; the token limits from the model when unset.
#pragma once

#include <cstdint>

namespace kiln::api {

struct ValidationLimits {
  int32_t max_best_of = 2;
  int32_t max_stop_sequences = 4;
  int32_t max_top_n_tokens = 5;
  int32_t max_input_tokens = 4095;
  int32_t max_total_tokens = 4096;
  int32_t max_client_batch_size = 4;  // prompts in one /v1/completions request
  int32_t max_n = 16;                 // choices in one OpenAI request
};

}  // namespace kiln::api
