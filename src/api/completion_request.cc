#include "api/completion_request.h"

#include <limits>

#include "api/api_error.h"
#include "api/json_fields.h"
#include "util/error.h"

namespace kiln::api {
namespace {

constexpr int32_t kDefaultMaxTokens = 16;

CompletionPrompt TokenPrompt(const nlohmann::json& ids, const std::string& path) {
  CompletionPrompt p;
  p.is_tokens = true;
  p.token_ids = ReadIntList(ids, path, 0, std::numeric_limits<int32_t>::max());
  return p;
}

// "prompt": a string, a list of strings, a list of token ids or a list of such lists.
std::vector<CompletionPrompt> ParsePrompts(const JsonFields& top) {
  const nlohmann::json* prompt = top.Get("prompt");
  if (prompt == nullptr) throw WrongTypeError("", "missing field `prompt`");
  std::vector<CompletionPrompt> out;
  if (prompt->is_string()) {
    out.push_back({prompt->get<std::string>(), {}, false});
    return out;
  }
  if (!prompt->is_array()) {
    throw WrongTypeError("prompt", StrCat("invalid type: ", DescribeJsonValue(*prompt),
                                          ", expected a string or a sequence"));
  }
  if (!prompt->empty() && (*prompt)[0].is_number()) {
    out.push_back(TokenPrompt(*prompt, "prompt"));
    return out;
  }
  for (size_t i = 0; i < prompt->size(); ++i) {
    const nlohmann::json& item = (*prompt)[i];
    const std::string path = StrCat("prompt[", i, "]");
    if (item.is_string()) {
      out.push_back({item.get<std::string>(), {}, false});
    } else if (item.is_array()) {
      out.push_back(TokenPrompt(item, path));
    } else {
      throw WrongTypeError(path, StrCat("invalid type: ", DescribeJsonValue(item),
                                        ", expected a string or a sequence of token ids"));
    }
  }
  return out;
}

}  // namespace

CompletionRequest ParseCompletionRequest(const nlohmann::json& body,
                                         const ValidationLimits& limits) {
  JsonFields top(body, "");
  CompletionRequest r;
  r.prompts = ParsePrompts(top);
  if (r.prompts.empty()) throw ApiError(422, "validation", "At least one prompt is required");
  if (static_cast<int64_t>(r.prompts.size()) > limits.max_client_batch_size) {
    throw ApiError(422, "batch size exceeded",
                   StrCat("Number of prompts exceeds the maximum allowed batch size of ",
                          limits.max_client_batch_size));
  }
  if (top.String("suffix")) {
    throw ApiError(422, "suffix not supported",
                   "Suffix is not supported and can be achieved by preprocessing the prompt.",
                   "suffix");
  }
  r.model = top.String("model").value_or("");
  r.options = ParseOpenAiOptions(top, limits, kDefaultMaxTokens);
  r.stream = ParseStreamOptions(top);
  r.echo = top.Bool("echo").value_or(false);
  std::optional<int64_t> logprobs = top.Int("logprobs", 0, INT64_MAX, "usize");
  if (logprobs && *logprobs > limits.max_top_n_tokens) {
    throw ValidationError(
        StrCat("`logprobs` must be >= 0 and <= ", limits.max_top_n_tokens, ". Given: ", *logprobs),
        "logprobs");
  }
  r.logprobs = logprobs ? static_cast<int32_t>(*logprobs) : -1;
  r.options.logprobs = logprobs.has_value();
  r.options.top_n_tokens = r.logprobs > 0 ? r.logprobs : 0;
  RejectResponseFormat(top);
  return r;
}

}  // namespace kiln::api
