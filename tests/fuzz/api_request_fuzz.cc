// libFuzzer target for request bodies as the routes of src/server parse them: ParseJsonObject,
// then the TGI /generate body (streamed or not), the OpenAI /v1/chat/completions and
// /v1/completions bodies into their option structs, and the token budget.
// What must hold: each parse ends in a request or an api::ApiError with a 4xx status whose
// TGI and OpenAI error bodies serialize to valid JSON (never another exception: that would be
// a 500); an accepted request respects the ValidationLimits it was parsed with.
//
// The input is one body. Run: KILN_FUZZ_TARGETS=api_request scripts/fuzz.sh
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "api/api_error.h"
#include "api/chat_request.h"
#include "api/completion_request.h"
#include "api/generate_request.h"
#include "api/json_input.h"
#include "api/token_budget.h"
#include "fuzz_util.h"

namespace {

namespace api = kiln::api;

const api::ValidationLimits kLimits;  // kiln serve's defaults (TGI's)

void CheckError(const api::ApiError& e) {
  FUZZ_CHECK(e.status() >= 400 && e.status() < 500);
  for (const std::string& body : {api::TgiErrorJson(e), api::OpenAiErrorJson(e)}) {
    FUZZ_CHECK(nlohmann::json::parse(body, nullptr, false).is_object());
  }
}

// Runs `parse`; an ApiError is an answer, anything else escapes and crashes the target.
template <typename Parse>
void Attempt(const Parse& parse) {
  try {
    parse();
  } catch (const api::ApiError& e) {
    CheckError(e);
  }
}

void CheckOptions(const api::GenerationOptions& o, int64_t input_tokens) {
  FUZZ_CHECK(o.n >= 1 && o.n <= std::max(kLimits.max_n, kLimits.max_best_of));
  FUZZ_CHECK(static_cast<int64_t>(o.stop.size()) <= kLimits.max_stop_sequences);
  for (const std::string& s : o.stop) FUZZ_CHECK(!s.empty());
  FUZZ_CHECK(o.top_n_tokens >= 0 && o.top_n_tokens <= kLimits.max_top_n_tokens);
  FUZZ_CHECK(std::isfinite(o.temperature) && o.temperature > 0.0f);
  FUZZ_CHECK(o.top_p > 0.0f && o.top_p <= 1.0f);
  FUZZ_CHECK(o.top_k >= 0 && o.min_tokens >= 0);
  FUZZ_CHECK(o.repetition_penalty > 0.0f);
  FUZZ_CHECK(!o.max_new_tokens || *o.max_new_tokens > 0);
  FUZZ_CHECK(!o.truncate || (*o.truncate > 0 && *o.truncate <= kLimits.max_input_tokens));
  for (int32_t id : o.stop_token_ids) FUZZ_CHECK(id >= 0);
  // The prompt's token count is known only after tokenization; its byte length stands in.
  Attempt([&] {
    const int32_t n = api::ResolveMaxNewTokens(input_tokens, o.max_new_tokens, kLimits);
    FUZZ_CHECK(n >= 1 && input_tokens + n <= kLimits.max_total_tokens);
  });
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  nlohmann::json body;
  try {
    body = api::ParseJsonObject(input);
  } catch (const api::ApiError& e) {
    CheckError(e);
    return 0;
  }
  Attempt([&] { api::ReadStreamFlag(body); });
  for (bool streaming : {false, true}) {
    Attempt([&] {
      const api::GenerateRequest r = api::ParseGenerateRequest(body, kLimits, streaming);
      FUZZ_CHECK(!r.inputs.empty());
      FUZZ_CHECK(r.best_of >= 1 && r.best_of <= kLimits.max_best_of);
      FUZZ_CHECK(!streaming || (r.best_of == 1 && !r.decoder_input_details));
      CheckOptions(r.options, static_cast<int64_t>(r.inputs.size()));
    });
  }
  Attempt([&] {
    const api::ChatRequest r = api::ParseChatRequest(body, kLimits);
    FUZZ_CHECK(r.messages.is_array() && !r.messages.empty());
    for (const auto& m : r.messages) {
      FUZZ_CHECK(m.is_object() && m.contains("content") && m.find("content")->is_string());
    }
    CheckOptions(r.options, static_cast<int64_t>(r.messages.dump().size()));
  });
  Attempt([&] {
    const api::CompletionRequest r = api::ParseCompletionRequest(body, kLimits);
    FUZZ_CHECK(!r.prompts.empty() &&
               static_cast<int64_t>(r.prompts.size()) <= kLimits.max_client_batch_size);
    FUZZ_CHECK(r.logprobs >= -1 && r.logprobs <= kLimits.max_top_n_tokens);
    for (const api::CompletionPrompt& p : r.prompts) {
      CheckOptions(r.options, static_cast<int64_t>(p.is_tokens ? p.token_ids.size()
                                                                : p.text.size()));
    }
  });
  return 0;
}
