#include "server/tgi_calls.h"

#include <cstdio>

#include "api/json_output.h"
#include "api/sse.h"

namespace kiln {
namespace {

std::string Millis(double seconds) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.0f", seconds * 1000.0);
  return buf;
}

std::string SecondsText(double seconds) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.3f", seconds);
  return buf;
}

std::vector<api::TokenInfo> Alternatives(const std::vector<TopToken>& top) {
  std::vector<api::TokenInfo> out;
  for (const TopToken& t : top) out.push_back({t.id, t.text, t.logprob, t.special});
  return out;
}

}  // namespace

TgiGenerateCall::TgiGenerateCall(ServerState& state, Reply reply, Admission::Permit permit,
                                 Clock::time_point arrival, TgiCallOptions options)
    : GenerationCall(state, std::move(reply), std::move(permit), arrival, /*keep_tokens=*/true,
                     /*streaming=*/false),
      options_(std::move(options)) {}

api::SequenceResult TgiGenerateCall::Result(int32_t index) const {
  const ChoiceState& c = choice(index);
  api::SequenceResult r;
  r.generated_text = options_.return_full_text ? options_.inputs + c.text : c.text;
  r.finish_reason = TgiFinishReason(c.finish);
  r.generated_tokens = c.generated;
  if (options_.do_sample) r.seed = c.seed;
  r.tokens = c.tokens;
  r.top_tokens = c.top;
  return r;
}

int32_t TgiGenerateCall::BestChoice() const {
  int32_t best = 0;
  double best_score = -1e300;
  for (int32_t i = 0; i < choice_count(); ++i) {
    const ChoiceState& c = choice(i);
    double sum = 0;
    for (const api::TokenInfo& t : c.tokens) sum += t.logprob;
    const double score = c.tokens.empty() ? -1e299 : sum / static_cast<double>(c.tokens.size());
    if (score > best_score) {
      best_score = score;
      best = i;
    }
  }
  return best;
}

http::Headers TgiGenerateCall::TimingHeaders() const {
  const RequestTiming t = Timing();
  const double per_token = t.generated_tokens > 0 ? t.inference / t.generated_tokens : 0.0;
  return {{"x-compute-type", "cpu"},
          {"x-compute-time", SecondsText(t.total)},
          {"x-compute-characters", std::to_string(options_.inputs.size())},
          {"x-total-time", Millis(t.total)},
          {"x-validation-time", Millis(t.validation)},
          {"x-queue-time", Millis(t.queue)},
          {"x-inference-time", Millis(t.inference)},
          {"x-time-per-token", Millis(per_token)},
          {"x-prompt-tokens", std::to_string(t.input_tokens)},
          {"x-generated-tokens", std::to_string(t.generated_tokens)}};
}

void TgiGenerateCall::OnAllFinished() {
  if (std::optional<api::ApiError> failure = Failure()) return RespondError(reply_, *failure);
  const int32_t best = BestChoice();
  std::vector<api::SequenceResult> others;
  for (int32_t i = 0; i < choice_count(); ++i) {
    if (i != best) others.push_back(Result(i));
  }
  nlohmann::json body = api::GenerateResponseJson(Result(best), others, options_.details);
  if (options_.compat_array) body = nlohmann::json::array({std::move(body)});
  RespondJson(reply_, 200, api::DumpJson(body), TimingHeaders());
}

TgiStreamCall::TgiStreamCall(ServerState& state, Reply reply, Admission::Permit permit,
                             Clock::time_point arrival, TgiCallOptions options)
    : GenerationCall(state, std::move(reply), std::move(permit), arrival, /*keep_tokens=*/false,
                     /*streaming=*/true),
      options_(std::move(options)) {}

void TgiStreamCall::OnEvent(int32_t index, const GenerationEvent& event) {
  if (index != 0 || (event.token_id < 0 && !event.finish)) return;
  if (event.finish && *event.finish == FinishReason::kError) {
    return SseErrorAndEnd(reply_, *Failure());
  }
  if (event.finish && *event.finish == FinishReason::kCancelled) {
    return SseErrorAndEnd(
        reply_, api::ApiError(500, "incomplete_generation_stream", "Incomplete generation stream"));
  }
  ++frames_;
  // A finish without a token of its own still needs a token: clients require the field.
  api::TokenInfo token =
      event.token_id >= 0 ? api::TokenInfo{event.token_id, event.text, event.logprob, event.special}
                          : api::TokenInfo{-1, "", 0.0f, true};
  std::string frame;
  if (event.finish) {
    const ChoiceState& c = choice(0);
    const std::string text = options_.return_full_text ? options_.inputs + c.text : c.text;
    api::StreamDetails details{TgiFinishReason(c.finish), c.generated,
                               options_.do_sample ? std::optional<uint64_t>(c.seed) : std::nullopt,
                               options_.input_length};
    frame = api::StreamTokenJson(frames_, token, Alternatives(event.top), &text,
                                 options_.details ? &details : nullptr);
  } else {
    frame = api::StreamTokenJson(frames_, token, Alternatives(event.top), nullptr, nullptr);
  }
  reply_.exchange->Write(api::SseData(frame));
  if (event.finish) reply_.exchange->End();
}

}  // namespace kiln
