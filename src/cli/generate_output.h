// JSON renderings of one generated completion for `kiln generate` (--details and --batch).
#pragma once

#include <nlohmann/json.hpp>

#include "cli/engine_run.h"

namespace kiln {

// {"generated_text", "token_ids", "finish_reason", "generated_tokens", "seed"} and, with
// `details`, "tokens": [{"id", "text", "logprob", "special"[, "top_tokens"]}].
nlohmann::json OutcomeJson(const RequestOutcome& outcome, bool details);

}  // namespace kiln
