#include "server/generation_call.h"

#include <algorithm>
#include <string_view>

#include "util/error.h"

namespace kiln {
namespace {

double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

// The engine refuses a request that can never fit (422), when its queue is full ("Model is
// overloaded": 429) or while it stops (503).
api::ApiError MapEngineRefusal(const kiln::Error& e) {
  const std::string_view what = e.what();
  if (what.find("overloaded") != std::string_view::npos ||
      what.find("queue") != std::string_view::npos) {
    return api::OverloadedError();
  }
  if (what.find("shutting down") != std::string_view::npos) return api::ShuttingDownError();
  return api::ValidationError(what);
}

std::vector<api::TokenInfo> Alternatives(const std::vector<TopToken>& top) {
  std::vector<api::TokenInfo> out;
  out.reserve(top.size());
  for (const TopToken& t : top) out.push_back({t.id, t.text, t.logprob, t.special});
  return out;
}

// The request's parameters as span attributes (TGI records them on its generate span).
std::vector<telemetry::Attribute> SpanParameters(const GenerationRequest& r) {
  const SamplingParams& s = r.sampling;
  std::vector<telemetry::Attribute> a = {
      {"gen_ai.request.max_tokens", int64_t{r.stop.max_new_tokens}},
      {"kiln.request.do_sample", s.do_sample},
      {"kiln.request.n", int64_t{r.n}}};
  if (s.do_sample) {
    a.push_back({"gen_ai.request.temperature", double{s.temperature}});
    if (s.top_p < 1.0f) a.push_back({"gen_ai.request.top_p", double{s.top_p}});
    if (s.top_k > 0) a.push_back({"gen_ai.request.top_k", int64_t{s.top_k}});
  }
  if (s.repetition_penalty != 1.0f) {
    a.push_back({"kiln.request.repetition_penalty", double{s.repetition_penalty}});
  }
  if (s.seed) a.push_back({"gen_ai.request.seed", static_cast<int64_t>(*s.seed)});
  return a;
}

}  // namespace

std::string TgiFinishReason(FinishReason r) {
  switch (r) {
    case FinishReason::kLength:
      return "length";
    case FinishReason::kEosToken:
      return "eos_token";
    case FinishReason::kStopSequence:
      return "stop_sequence";
    case FinishReason::kCancelled:
      return "cancelled";
    case FinishReason::kError:
      return "error";
  }
  return "length";
}

GenerationCall::GenerationCall(ServerState& state, Reply reply, Admission::Permit permit,
                               Clock::time_point arrival, bool keep_tokens, bool streaming)
    : state_holder_(state.shared_from_this()),
      state_(state),
      reply_(std::move(reply)),
      permit_(std::move(permit)),
      arrival_(arrival),
      keep_tokens_(keep_tokens),
      streaming_(streaming) {}

GenerationCall::~GenerationCall() {
  if (done_) return;
  if (reply_.exchange->closed()) {  // the client left; its cancel callback never got to run
    state_.metrics.RequestFailed("dropped");
    return;
  }
  // The engine let go of every sink without a final event (it was stopped).
  state_.metrics.RequestFailed("incomplete");
  const api::ApiError e = api::IncompleteGenerationError();
  if (streaming_) {
    SseErrorAndEnd(reply_, e);
  } else {
    RespondError(reply_, e);
  }
}

void GenerationCall::Submit(std::vector<GenerationRequest> requests) {
  n_ = requests.empty() ? 1 : std::max(1, requests[0].n);
  choices_.resize(requests.size() * static_cast<size_t>(n_));
  if (!requests.empty()) parameters_ = SpanParameters(requests[0]);
  for (const GenerationRequest& r : requests) {
    prompt_sizes_.push_back(static_cast<int32_t>(r.prompt.size()));
    max_new_tokens_.push_back(r.stop.max_new_tokens);
  }
  auto self = shared_from_this();
  submitted_ = Clock::now();
  for (size_t k = 0; k < requests.size(); ++k) {
    const auto sub = static_cast<int32_t>(k);
    try {
      ids_.push_back(state_.backend->Submit(
          std::move(requests[k]),
          [self, sub](GenerationEvent&& event) { return self->Enqueue(sub, std::move(event)); }));
    } catch (const kiln::Error& e) {
      CancelAll();
      throw MapEngineRefusal(e);
    } catch (...) {
      CancelAll();
      throw;
    }
  }
  std::weak_ptr<GenerationCall> weak = self;
  reply_.exchange->OnClose([weak] {
    if (auto call = weak.lock(); call && !call->done_) {
      call->CancelAll();
      call->Record("cancelled");
      call->state_.metrics.RequestFailed("dropped");
    }
  });
}

bool GenerationCall::Enqueue(int32_t sub, GenerationEvent&& event) {
  const Clock::time_point at = Clock::now();
  bool post;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (aborted_) return false;
    pending_.push_back({sub, std::move(event), at});
    post = !drain_posted_;
    drain_posted_ = true;
  }
  if (post) reply_.exchange->Post([self = shared_from_this()] { self->Drain(); });
  return !reply_.exchange->closed();
}

void GenerationCall::Drain() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    drain_posted_ = false;
    draining_.swap(pending_);
  }
  for (Queued& q : draining_) {
    if (done_) break;
    Take(q.sub, q.event, q.at);
  }
  draining_.clear();
}

void GenerationCall::Take(int32_t sub, GenerationEvent& event, Clock::time_point at) {
  if (event.choice < 0 || event.choice >= n_) return;
  const int32_t index = sub * n_ + event.choice;
  if (index >= choice_count()) return;
  ChoiceState& c = choices_[index];
  if (c.finished) return;
  if (event.token_id >= 0) {
    ++c.generated;
    c.text += event.text;
    if (keep_tokens_) {
      c.tokens.push_back({event.token_id, event.text, event.logprob, event.special});
      if (!event.top.empty()) c.top.push_back(Alternatives(event.top));
    }
    if (first_token_ == Clock::time_point()) {
      first_token_ = at;
      state_.metrics.ObserveTimeToFirstToken(Seconds(at - arrival_));
    } else if (c.generated > 1) {
      state_.metrics.ObserveInterTokenLatency(Seconds(at - c.last_token));
    }
    c.last_token = last_token_ = at;
  }
  if (event.scheduled != Clock::time_point() &&
      (scheduled_ == Clock::time_point() || event.scheduled < scheduled_)) {
    scheduled_ = event.scheduled;
  }
  c.seed = event.seed;
  c.speculated = event.speculated_tokens;
  c.prompt_tokens = prompt_sizes_[sub];
  if (event.finish) {
    c.finished = true;
    c.finish = *event.finish;
    c.error = event.error;
    ++finished_count_;
  }
  OnEvent(index, event);
  if (finished_count_ == choice_count()) Finish();
}

void GenerationCall::Finish() {
  done_ = true;
  finished_ = Clock::now();
  if (std::optional<api::ApiError> failure = Failure()) {
    state_.metrics.RequestFailed(failure->status() == 424 ? "generation" : "incomplete");
  } else {
    state_.metrics.RequestSucceeded(Timing());
  }
  permit_.Release();
  Record(choices_.empty() ? "" : TgiFinishReason(choices_[0].finish));
  OnAllFinished();
}

void GenerationCall::Record(std::string finish_reason) {
  if (reply_.record == nullptr) return;
  GenerationSummary g;
  g.timing = Timing();
  g.submitted = submitted_;
  g.scheduled = scheduled_;
  g.first_token = first_token_;
  g.last_token = last_token_;
  g.finish_reason = std::move(finish_reason);
  g.ended = finished_ != Clock::time_point() ? finished_ : Clock::now();
  g.parameters = parameters_;
  reply_.record->SetGeneration(std::move(g));
}

void GenerationCall::CancelAll() {
  done_ = true;
  {
    std::lock_guard<std::mutex> lock(mu_);
    aborted_ = true;
  }
  for (uint64_t id : ids_) state_.backend->Cancel(id);
  permit_.Release();
}

std::optional<api::ApiError> GenerationCall::Failure() const {
  for (const ChoiceState& c : choices_) {
    if (c.finish == FinishReason::kError) {
      return api::GenerationError(c.error.empty() ? "unknown engine error" : c.error);
    }
  }
  for (const ChoiceState& c : choices_) {
    if (c.finish == FinishReason::kCancelled) return api::IncompleteGenerationError();
  }
  return std::nullopt;
}

int64_t GenerationCall::prompt_tokens_total() const {
  int64_t total = 0;
  for (int32_t p : prompt_sizes_) total += p;
  return total;
}

int64_t GenerationCall::completion_tokens_total() const {
  int64_t total = 0;
  for (const ChoiceState& c : choices_) total += c.generated;
  return total;
}

RequestTiming GenerationCall::Timing() const {
  RequestTiming t;
  const Clock::time_point zero{};
  const Clock::time_point now = finished_ != zero ? finished_ : Clock::now();
  t.total = Seconds(now - arrival_);
  t.validation = Seconds(submitted_ - arrival_);
  const Clock::time_point first = first_token_ == zero ? now : first_token_;
  const Clock::time_point last = last_token_ == zero ? now : last_token_;
  // A request cancelled or refused before its first step: all of its wait was queue.
  const Clock::time_point scheduled = scheduled_ == zero ? std::min(first, now) : scheduled_;
  t.queue = Seconds(scheduled - submitted_);
  t.inference = Seconds(last - scheduled);
  t.prefill = Seconds(first - scheduled);
  t.decode = Seconds(last - first);
  t.input_tokens = prompt_tokens_total();
  t.generated_tokens = completion_tokens_total();
  for (const ChoiceState& c : choices_) t.skipped_tokens += c.speculated;
  for (int32_t m : max_new_tokens_) t.max_new_tokens += m;
  return t;
}

}  // namespace kiln
