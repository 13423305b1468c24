#include "api/openai_response.h"

#include <cmath>
#include <limits>
#include <random>

#include "api/json_output.h"

namespace kiln::api {
namespace {

float FiniteLogprob(float lp) {
  return std::isfinite(lp) ? lp : std::numeric_limits<float>::lowest();
}

nlohmann::json BytesJson(const std::string& text) {
  nlohmann::json bytes = nlohmann::json::array();
  for (unsigned char c : text) bytes.push_back(static_cast<int>(c));
  return bytes;
}

nlohmann::json NullableString(std::string_view s) {
  return s.empty() ? nlohmann::json(nullptr) : nlohmann::json(std::string(s));
}

nlohmann::json ResponseHead(const OpenAiHeader& h, const char* object,
                            const std::string& fingerprint) {
  return {{"id", h.id},
          {"object", object},
          {"created", h.created},
          {"model", h.model},
          {"system_fingerprint", fingerprint}};
}

void AddUsage(nlohmann::json& out, const ChunkUsage& usage) {
  if (!usage.field) return;
  out["usage"] = usage.value ? UsageJson(*usage.value) : nlohmann::json(nullptr);
}

}  // namespace

std::string OpenAiFinishReason(std::string_view tgi_reason) {
  if (tgi_reason == "eos_token" || tgi_reason == "stop_sequence") return "stop";
  return std::string(tgi_reason);
}

nlohmann::json UsageJson(const Usage& u) {
  return {{"prompt_tokens", u.prompt_tokens},
          {"completion_tokens", u.completion_tokens},
          {"total_tokens", u.prompt_tokens + u.completion_tokens}};
}

nlohmann::json ChatLogprobsJson(const std::vector<TokenLogprob>& tokens) {
  nlohmann::json content = nlohmann::json::array();
  for (const TokenLogprob& t : tokens) {
    nlohmann::json top = nlohmann::json::array();
    for (const TokenInfo& alt : t.top) {
      top.push_back({{"token", alt.text},
                     {"logprob", FiniteLogprob(alt.logprob)},
                     {"bytes", BytesJson(alt.text)}});
    }
    content.push_back({{"token", t.token.text},
                       {"logprob", FiniteLogprob(t.token.logprob)},
                       {"bytes", BytesJson(t.token.text)},
                       {"top_logprobs", std::move(top)}});
  }
  return {{"content", std::move(content)}};
}

std::string ChatCompletionJson(const OpenAiHeader& h, const std::vector<ChatChoice>& choices,
                               const Usage& usage, const std::string& fingerprint) {
  nlohmann::json out = ResponseHead(h, "chat.completion", fingerprint);
  nlohmann::json list = nlohmann::json::array();
  for (const ChatChoice& c : choices) {
    list.push_back({{"index", c.index},
                    {"message", {{"role", "assistant"}, {"content", c.content}}},
                    {"logprobs", c.logprobs},
                    {"finish_reason", NullableString(c.finish_reason)}});
  }
  out["choices"] = std::move(list);
  out["usage"] = UsageJson(usage);
  return DumpJson(out);
}

std::string ChatChunkJson(const OpenAiHeader& h, int32_t index, bool first,
                          std::string_view content, const nlohmann::json& logprobs,
                          std::string_view finish_reason, const ChunkUsage& usage,
                          const std::string& fingerprint) {
  nlohmann::json delta = nlohmann::json::object();
  if (first) delta["role"] = "assistant";
  if (!content.empty() || first) delta["content"] = std::string(content);
  nlohmann::json out = ResponseHead(h, "chat.completion.chunk", fingerprint);
  out["choices"] = nlohmann::json::array({{{"index", index},
                                           {"delta", std::move(delta)},
                                           {"logprobs", logprobs},
                                           {"finish_reason", NullableString(finish_reason)}}});
  AddUsage(out, usage);
  return DumpJson(out);
}

std::string UsageChunkJson(const OpenAiHeader& h, const char* object, const Usage& usage,
                           const std::string& fingerprint) {
  nlohmann::json out = ResponseHead(h, object, fingerprint);
  out["choices"] = nlohmann::json::array();
  out["usage"] = UsageJson(usage);
  return DumpJson(out);
}

nlohmann::json CompletionLogprobsJson(const std::vector<TokenLogprob>& tokens,
                                      int64_t text_offset) {
  nlohmann::json texts = nlohmann::json::array(), logprobs = nlohmann::json::array(),
                 tops = nlohmann::json::array(), offsets = nlohmann::json::array();
  for (const TokenLogprob& t : tokens) {
    texts.push_back(t.token.text);
    logprobs.push_back(FiniteLogprob(t.token.logprob));
    nlohmann::json top = nlohmann::json::object();
    for (const TokenInfo& alt : t.top) top[alt.text] = FiniteLogprob(alt.logprob);
    tops.push_back(std::move(top));
    offsets.push_back(text_offset);
    text_offset += static_cast<int64_t>(t.token.text.size());
  }
  return {{"tokens", std::move(texts)},
          {"token_logprobs", std::move(logprobs)},
          {"top_logprobs", std::move(tops)},
          {"text_offset", std::move(offsets)}};
}

std::string CompletionJson(const OpenAiHeader& h, const std::vector<CompletionChoice>& choices,
                           const Usage& usage, const std::string& fingerprint) {
  nlohmann::json out = ResponseHead(h, "text_completion", fingerprint);
  nlohmann::json list = nlohmann::json::array();
  for (const CompletionChoice& c : choices) {
    list.push_back({{"index", c.index},
                    {"text", c.text},
                    {"logprobs", c.logprobs},
                    {"finish_reason", NullableString(c.finish_reason)}});
  }
  out["choices"] = std::move(list);
  out["usage"] = UsageJson(usage);
  return DumpJson(out);
}

std::string CompletionChunkJson(const OpenAiHeader& h, int32_t index, std::string_view text,
                                const nlohmann::json& logprobs, std::string_view finish_reason,
                                const ChunkUsage& usage, const std::string& fingerprint) {
  nlohmann::json out = ResponseHead(h, "text_completion", fingerprint);
  out["choices"] = nlohmann::json::array({{{"index", index},
                                           {"text", std::string(text)},
                                           {"logprobs", logprobs},
                                           {"finish_reason", NullableString(finish_reason)}}});
  AddUsage(out, usage);
  return DumpJson(out);
}

std::string NewCompletionId(std::string_view prefix) {
  static constexpr char kAlphabet[] =
      "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
  thread_local std::mt19937_64 rng{std::random_device{}()};
  std::uniform_int_distribution<int> pick(0, static_cast<int>(sizeof(kAlphabet)) - 2);
  std::string id(prefix);
  for (int i = 0; i < 24; ++i) id += kAlphabet[pick(rng)];
  return id;
}

}  // namespace kiln::api
