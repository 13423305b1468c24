#include "server/openai_call.h"

#include <ctime>

#include "api/sse.h"

namespace kiln {

OpenAiCall::OpenAiCall(ServerState& state, Reply reply, Admission::Permit permit,
                       Clock::time_point arrival, OpenAiCallOptions options)
    : GenerationCall(state, std::move(reply), std::move(permit), arrival, options.logprobs,
                     options.stream.stream),
      options_(std::move(options)),
      fingerprint_("kiln-" + state.config.version) {
  header_.id = api::NewCompletionId(options_.chat ? "chatcmpl-" : "cmpl-");
  header_.created = static_cast<int64_t>(std::time(nullptr));
  header_.model = options_.model;
}

const std::string& OpenAiCall::EchoPrefix(int32_t index) const {
  static const std::string kEmpty;
  const size_t prompt = static_cast<size_t>(index / n());
  return prompt < options_.echo_prefix.size() ? options_.echo_prefix[prompt] : kEmpty;
}

nlohmann::json OpenAiCall::TokenLogprobs(const GenerationEvent& event, int64_t text_offset) const {
  if (!options_.logprobs || event.token_id < 0) return nullptr;
  api::TokenLogprob t;
  t.token = {event.token_id, event.text, event.logprob, event.special};
  for (const TopToken& alt : event.top)
    t.top.push_back({alt.id, alt.text, alt.logprob, alt.special});
  return options_.chat ? api::ChatLogprobsJson({t}) : api::CompletionLogprobsJson({t}, text_offset);
}

void OpenAiCall::OnEvent(int32_t index, const GenerationEvent& event) {
  if (!options_.stream.stream || ended_) return;
  if (event.finish &&
      (*event.finish == FinishReason::kError || *event.finish == FinishReason::kCancelled)) {
    ended_ = true;
    return SseErrorAndEnd(reply_, *Failure());
  }
  if (started_.empty()) {
    started_.assign(choice_count(), false);
    text_offset_.assign(choice_count(), 0);
  }
  const bool first = !started_[index];
  const size_t prefix = first && !options_.chat ? EchoPrefix(index).size() : 0;
  std::string text = prefix > 0 ? EchoPrefix(index) : std::string();
  if (event.token_id >= 0) text += event.text;
  const std::string finish =
      event.finish ? api::OpenAiFinishReason(TgiFinishReason(*event.finish)) : std::string();
  nlohmann::json logprobs =
      TokenLogprobs(event, text_offset_[index] + static_cast<int64_t>(prefix));
  // A token that adds no text yet (half a UTF-8 character) makes no chunk of its own.
  if (text.empty() && finish.empty() && !first && logprobs.is_null()) return;
  started_[index] = true;
  text_offset_[index] += static_cast<int64_t>(text.size());
  api::ChunkUsage usage;
  usage.field = options_.stream.include_usage || options_.stream.continuous_usage_stats;
  if (options_.stream.continuous_usage_stats) {
    usage.value = api::Usage{prompt_tokens_total(), completion_tokens_total()};
  }
  std::string frame =
      options_.chat
          ? api::ChatChunkJson(header_, index, first, text, logprobs, finish, usage, fingerprint_)
          : api::CompletionChunkJson(header_, index, text, logprobs, finish, usage, fingerprint_);
  reply_.exchange->Write(api::SseData(frame));
}

void OpenAiCall::OnAllFinished() {
  if (!options_.stream.stream) return RespondWhole();
  if (ended_) return;
  ended_ = true;
  if (options_.stream.include_usage) {
    const char* object = options_.chat ? "chat.completion.chunk" : "text_completion";
    reply_.exchange->Write(api::SseData(api::UsageChunkJson(
        header_, object, {prompt_tokens_total(), completion_tokens_total()}, fingerprint_)));
  }
  reply_.exchange->Write(api::kSseDone);
  reply_.exchange->End();
}

void OpenAiCall::RespondWhole() {
  if (std::optional<api::ApiError> failure = Failure()) return RespondError(reply_, *failure);
  const api::Usage usage{prompt_tokens_total(), completion_tokens_total()};
  std::vector<api::ChatChoice> chat;
  std::vector<api::CompletionChoice> completion;
  for (int32_t i = 0; i < choice_count(); ++i) {
    const ChoiceState& c = choice(i);
    const std::string finish = api::OpenAiFinishReason(TgiFinishReason(c.finish));
    std::vector<api::TokenLogprob> lp;
    if (options_.logprobs) {
      for (size_t t = 0; t < c.tokens.size(); ++t) {
        lp.push_back({c.tokens[t], t < c.top.size() ? c.top[t] : std::vector<api::TokenInfo>{}});
      }
    }
    if (options_.chat) {
      chat.push_back({i, c.text, finish,
                      options_.logprobs ? api::ChatLogprobsJson(lp) : nlohmann::json(nullptr)});
    } else {
      const std::string& prefix = EchoPrefix(i);
      completion.push_back(
          {i, prefix + c.text, finish,
           options_.logprobs ? api::CompletionLogprobsJson(lp, static_cast<int64_t>(prefix.size()))
                             : nlohmann::json(nullptr)});
    }
  }
  RespondJson(reply_, 200,
              options_.chat ? api::ChatCompletionJson(header_, chat, usage, fingerprint_)
                            : api::CompletionJson(header_, completion, usage, fingerprint_));
}

}  // namespace kiln
