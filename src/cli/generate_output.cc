#include "cli/generate_output.h"

#include <string>

#include "util/utf8.h"

namespace kiln {
namespace {

nlohmann::json TopTokensJson(const GenerationEvent& ev) {
  nlohmann::json top = nlohmann::json::array();
  for (const TopToken& t : ev.top) {
    top.push_back({{"id", t.id},
                   {"text", ValidUtf8OrReplace(t.text)},
                   {"logprob", t.logprob},
                   {"special", t.special}});
  }
  return top;
}

}  // namespace

nlohmann::json OutcomeJson(const RequestOutcome& outcome, bool details) {
  nlohmann::json tokens = nlohmann::json::array();
  std::vector<int32_t> ids;
  std::string text;
  std::string finish = "error";
  uint64_t seed = 0;
  for (const GenerationEvent& ev : outcome.events) {
    text += ev.text;
    seed = ev.seed;
    if (ev.finish) finish = FinishReasonName(*ev.finish);
    if (ev.token_id < 0) continue;  // a finish-only event
    ids.push_back(ev.token_id);
    if (!details) continue;
    nlohmann::json t = {{"id", ev.token_id},
                        {"text", ValidUtf8OrReplace(ev.text)},
                        {"logprob", ev.logprob},
                        {"special", ev.special}};
    if (!ev.top.empty()) t["top_tokens"] = TopTokensJson(ev);
    tokens.push_back(std::move(t));
  }
  nlohmann::json out = {{"generated_text", ValidUtf8OrReplace(text)},
                        {"token_ids", ids},
                        {"finish_reason", finish},
                        {"generated_tokens", ids.size()},
                        {"seed", seed}};
  if (details) out["tokens"] = std::move(tokens);
  if (!outcome.error.empty()) out["error"] = outcome.error;
  return out;
}

}  // namespace kiln
