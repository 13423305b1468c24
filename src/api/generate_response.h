// TGI response bodies: GenerateResponse for /generate (and its array form for POST /) and the
// StreamResponse frames of /generate_stream, with TGI's field names (router/src/lib.rs).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace kiln::api {

struct TokenInfo {
  int32_t id = 0;
  std::string text;
  float logprob = 0.0f;
  bool special = false;
};

// One finished sequence, as /generate reports it.
struct SequenceResult {
  std::string generated_text;
  std::string finish_reason;  // "length", "eos_token" or "stop_sequence"
  int32_t generated_tokens = 0;
  std::optional<uint64_t> seed;  // null for greedy
  std::vector<TokenInfo> tokens;
  std::vector<std::vector<TokenInfo>> top_tokens;  // per token, when top_n_tokens > 0
};

// {"id","text","logprob","special"}; a non-finite logprob becomes the lowest float.
nlohmann::json TokenJson(const TokenInfo& t);

// {"generated_text", "details"?}: details when `details` is set; best_of_sequences when
// `others` is not empty; prefill is always [] (prompt logprobs are not computed).
nlohmann::json GenerateResponseJson(const SequenceResult& best,
                                    const std::vector<SequenceResult>& others, bool details);

struct StreamDetails {
  std::string finish_reason;
  int32_t generated_tokens = 0;
  std::optional<uint64_t> seed;
  int32_t input_length = 0;
};

// One /generate_stream event: {"index","token","top_tokens"?,"generated_text","details"}.
// `generated_text` and `details` are set on the last event only (details when requested).
std::string StreamTokenJson(int32_t index, const TokenInfo& token,
                            const std::vector<TokenInfo>& top_tokens,
                            const std::string* generated_text, const StreamDetails* details);

}  // namespace kiln::api
