// The per-request token checks that need the prompt's token count (TGI validate_input).
#pragma once

#include <cstdint>
#include <optional>

#include "api/limits.h"

namespace kiln::api {

// Returns the max_new_tokens to schedule: `requested`, or what is left of max_total_tokens.
// Throws a 422 ApiError with TGI's message when input + new tokens exceed max_total_tokens
// (checked first, as TGI does) or the input exceeds max_input_tokens.
int32_t ResolveMaxNewTokens(int64_t input_tokens, std::optional<int32_t> requested,
                            const ValidationLimits& limits);

}  // namespace kiln::api
