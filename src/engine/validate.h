// Submit-time checks: a request that can never run is refused with kiln::Error before it is
// queued (TGI validates before enqueueing too, with the texts reused here).
#pragma once

#include <cstdint>

#include "engine/request.h"

namespace kiln {

struct RequestLimits {
  int64_t vocab_size = 0;
  int64_t block_size = 0;
  int64_t num_blocks = 0;
  int64_t max_context = 0;
  bool has_tokenizer = false;
};

inline constexpr int32_t kMaxChoices = 128;  // OpenAI's limit on n

void ValidateRequest(const GenerationRequest& request, const RequestLimits& limits);

}  // namespace kiln
