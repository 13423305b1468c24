#include "sampling/params.h"

#include <cmath>

#include "util/error.h"
#include "util/utf8.h"

namespace kiln {
namespace {

void CheckTokenId(int64_t id, int64_t vocab_size, const char* what) {
  KILN_CHECK(id >= 0 && id < vocab_size, what, " token id ", id, " is outside the vocabulary (",
             vocab_size, " tokens)");
}

}  // namespace

void ValidateSamplingParams(const SamplingParams& p, int64_t vocab_size) {
  KILN_CHECK(std::isfinite(p.temperature) && p.temperature > 0,
             "`temperature` must be strictly positive");
  KILN_CHECK(p.top_k >= 0, "`top_k` must be >= 0");
  KILN_CHECK(p.top_p > 0 && p.top_p <= 1, "`top_p` must be > 0.0 and <= 1.0");
  KILN_CHECK(p.typical_p > 0 && p.typical_p <= 1, "`typical_p` must be > 0.0 and <= 1.0");
  KILN_CHECK(p.min_p >= 0 && p.min_p <= 1, "`min_p` must be >= 0.0 and <= 1.0");
  KILN_CHECK(std::isfinite(p.repetition_penalty) && p.repetition_penalty > 0,
             "`repetition_penalty` must be strictly positive");
  KILN_CHECK(std::isfinite(p.frequency_penalty) && std::isfinite(p.presence_penalty),
             "`frequency_penalty` and `presence_penalty` must be finite");
  for (const auto& [id, bias] : p.logit_bias) {
    CheckTokenId(id, vocab_size, "`logit_bias`");
    KILN_CHECK(!std::isnan(bias), "`logit_bias` values must be numbers");
  }
}

void ValidateStopParams(const StopParams& p, int64_t vocab_size) {
  KILN_CHECK(p.max_new_tokens > 0, "`max_new_tokens` must be strictly positive");
  KILN_CHECK(p.min_tokens >= 0, "`min_tokens` must be >= 0");
  for (const std::string& s : p.stop_sequences) {
    KILN_CHECK(!s.empty(), "stop sequences must not be empty");
    KILN_CHECK(CompleteUtf8Prefix(s) == s.size() && ValidUtf8OrReplace(s) == s,
               "stop sequences must be valid UTF-8");
  }
  for (int32_t id : p.stop_token_ids) CheckTokenId(id, vocab_size, "stop");
}

}  // namespace kiln
