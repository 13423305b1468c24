#include "api/generate_response.h"

#include <cmath>
#include <limits>

#include "api/json_output.h"

namespace kiln::api {
namespace {

nlohmann::json SeedJson(const std::optional<uint64_t>& seed) {
  return seed ? nlohmann::json(*seed) : nlohmann::json(nullptr);
}

nlohmann::json TokenListJson(const std::vector<TokenInfo>& tokens) {
  nlohmann::json out = nlohmann::json::array();
  for (const TokenInfo& t : tokens) out.push_back(TokenJson(t));
  return out;
}

// The fields shared by "details" and each entry of "best_of_sequences".
nlohmann::json SequenceDetailsJson(const SequenceResult& s) {
  nlohmann::json d = {{"finish_reason", s.finish_reason},
                      {"generated_tokens", s.generated_tokens},
                      {"seed", SeedJson(s.seed)},
                      {"prefill", nlohmann::json::array()},
                      {"tokens", TokenListJson(s.tokens)}};
  if (!s.top_tokens.empty()) {
    nlohmann::json top = nlohmann::json::array();
    for (const auto& step : s.top_tokens) top.push_back(TokenListJson(step));
    d["top_tokens"] = std::move(top);
  }
  return d;
}

}  // namespace

nlohmann::json TokenJson(const TokenInfo& t) {
  const float logprob = std::isfinite(t.logprob) ? t.logprob : std::numeric_limits<float>::lowest();
  return {{"id", t.id}, {"text", t.text}, {"logprob", logprob}, {"special", t.special}};
}

nlohmann::json GenerateResponseJson(const SequenceResult& best,
                                    const std::vector<SequenceResult>& others, bool details) {
  nlohmann::json out = {{"generated_text", best.generated_text}};
  if (!details) return out;
  nlohmann::json d = SequenceDetailsJson(best);
  if (!others.empty()) {
    nlohmann::json seqs = nlohmann::json::array();
    for (const SequenceResult& s : others) {
      nlohmann::json entry = SequenceDetailsJson(s);
      entry["generated_text"] = s.generated_text;
      seqs.push_back(std::move(entry));
    }
    d["best_of_sequences"] = std::move(seqs);
  }
  out["details"] = std::move(d);
  return out;
}

std::string StreamTokenJson(int32_t index, const TokenInfo& token,
                            const std::vector<TokenInfo>& top_tokens,
                            const std::string* generated_text, const StreamDetails* details) {
  nlohmann::json out = {{"index", index}, {"token", TokenJson(token)}};
  if (!top_tokens.empty()) out["top_tokens"] = TokenListJson(top_tokens);
  out["generated_text"] = generated_text ? nlohmann::json(*generated_text) : nullptr;
  if (details != nullptr) {
    out["details"] = {{"finish_reason", details->finish_reason},
                      {"generated_tokens", details->generated_tokens},
                      {"seed", SeedJson(details->seed)},
                      {"input_length", details->input_length}};
  } else {
    out["details"] = nullptr;
  }
  return DumpJson(out);
}

}  // namespace kiln::api
