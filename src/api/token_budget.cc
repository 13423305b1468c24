#include "api/token_budget.h"

#include <algorithm>

#include "api/api_error.h"
#include "util/error.h"

namespace kiln::api {

int32_t ResolveMaxNewTokens(int64_t input_tokens, std::optional<int32_t> requested,
                            const ValidationLimits& limits) {
  const int64_t max_new =
      requested ? *requested : std::max<int64_t>(0, limits.max_total_tokens - input_tokens);
  if (input_tokens + max_new > limits.max_total_tokens) {
    throw ValidationError(
        StrCat("`inputs` tokens + `max_new_tokens` must be <= ", limits.max_total_tokens,
               ". Given: ", input_tokens, " `inputs` tokens and ", max_new, " `max_new_tokens`"),
        "max_new_tokens");
  }
  if (input_tokens > limits.max_input_tokens) {
    throw ValidationError(StrCat("`inputs` must have less than ", limits.max_input_tokens,
                                 " tokens. Given: ", input_tokens),
                          "inputs");
  }
  return static_cast<int32_t>(max_new);
}

}  // namespace kiln::api
