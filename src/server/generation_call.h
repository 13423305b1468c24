// One admitted generation request in flight: its engine submissions (one per prompt, each with
// n choices), the events coming back from the engine thread, and the client. Events are queued
// by the sink on the engine thread and handled on the connection's strand, so formatting and
// socket work never run on the engine thread and a slow client never stalls a step. A client
// that disconnects cancels every submission at once. Subclasses shape the response per route.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "api/api_error.h"
#include "api/generate_response.h"
#include "engine/request.h"
#include "server/admission.h"
#include "server/metrics.h"
#include "server/reply.h"
#include "server/request_record.h"
#include "server/server_state.h"

namespace kiln {

using Clock = std::chrono::steady_clock;

// Accumulated output of one choice.
struct ChoiceState {
  std::string text;
  std::vector<api::TokenInfo> tokens;            // when the call keeps tokens
  std::vector<std::vector<api::TokenInfo>> top;  // per token, when top_n > 0
  int32_t generated = 0;
  int32_t speculated = 0;  // of `generated`, accepted drafts
  int32_t prompt_tokens = 0;
  uint64_t seed = 0;
  bool finished = false;
  FinishReason finish = FinishReason::kLength;
  std::string error;
  Clock::time_point last_token;
};

// "length", "eos_token", "stop_sequence" (TGI's names); cancelled and error have their own.
std::string TgiFinishReason(FinishReason r);

class GenerationCall : public std::enable_shared_from_this<GenerationCall> {
 public:
  // `keep_tokens`: keep every token's id, text and logprobs (details, logprobs, best_of).
  // `streaming`: the response is SSE (decides how an abandoned call is answered).
  GenerationCall(ServerState& state, Reply reply, Admission::Permit permit,
                 Clock::time_point arrival, bool keep_tokens, bool streaming);
  virtual ~GenerationCall();
  GenerationCall(const GenerationCall&) = delete;
  GenerationCall& operator=(const GenerationCall&) = delete;

  // Submits the requests (all with the same n) and watches the client. On a refusal from the
  // engine, cancels what was submitted and throws ApiError (422, or 429 for a full queue).
  // Call on the connection's strand (from the route handler).
  void Submit(std::vector<GenerationRequest> requests);

 protected:
  // Strand. An event of choice `index` (prompt * n + choice), after `choice(index)` took it in.
  virtual void OnEvent(int32_t index, const GenerationEvent& event) = 0;
  // Strand. Every choice has finished (possibly with an error or cancelled).
  virtual void OnAllFinished() = 0;

  const ChoiceState& choice(int32_t index) const { return choices_[index]; }
  int32_t choice_count() const { return static_cast<int32_t>(choices_.size()); }
  int32_t n() const { return n_; }
  // The first failed choice's error as an ApiError (424 generation, 500 incomplete), if any.
  std::optional<api::ApiError> Failure() const;
  int64_t prompt_tokens_total() const;
  int64_t completion_tokens_total() const;
  // Durations so far (the whole request once finished).
  RequestTiming Timing() const;

  std::shared_ptr<ServerState> state_holder_;
  ServerState& state_;
  Reply reply_;

 private:
  struct Queued {
    int32_t sub = 0;
    GenerationEvent event;
    Clock::time_point at;
  };
  bool Enqueue(int32_t sub, GenerationEvent&& event);
  void Drain();
  void Take(int32_t sub, GenerationEvent& event, Clock::time_point at);
  void Finish();
  void CancelAll();
  // Hands the request's figures to its access-log line and spans.
  void Record(std::string finish_reason);

  Admission::Permit permit_;
  const Clock::time_point arrival_;
  Clock::time_point submitted_, scheduled_, first_token_, last_token_, finished_;
  std::vector<telemetry::Attribute> parameters_;  // of the first request, for its span
  const bool keep_tokens_;
  const bool streaming_;
  int32_t n_ = 1;
  std::vector<uint64_t> ids_;
  std::vector<ChoiceState> choices_;
  std::vector<int32_t> prompt_sizes_, max_new_tokens_;
  int32_t finished_count_ = 0;
  bool done_ = false;  // strand: response complete, or the client left

  std::mutex mu_;
  std::vector<Queued> pending_, draining_;
  bool drain_posted_ = false;
  bool aborted_ = false;  // sinks answer false from now on
};

}  // namespace kiln
