// Sampled tokens -> events: detokenize, apply stop rules, send, finish.
#include <exception>
#include <utility>

#include "engine/engine_impl.h"
#include "tokenizer/tokenizer.h"
#include "util/error.h"
#include "util/log.h"

namespace kiln {

void Engine::Impl::EmitToken(Sequence& s, float* logits) {
  const GenerationRequest& q = s.request.request;
  SampleOptions options;
  options.suppress = s.stop.Suppressed(s.generated);
  options.logprob = q.logprobs;
  options.top_n = q.top_n_tokens;
  SampleResult result;
  result.top = &top_;
  s.sampler.Sample(logits, vocab_, options, workspace_, result);
  const int32_t token = result.token;
  s.tokens.push_back(token);
  ++s.generated;
  ++generated_;
  s.sampler.Accept(token);

  GenerationEvent ev = BaseEvent(s);
  ev.token_id = token;
  ev.logprob = result.logprob;
  ev.special = Detokenizer::IsSpecial(tokenizer_, token);
  if (q.top_n_tokens > 0) FillTopTokens(ev);
  ev.finish = TakeText(s, token, ev.text);
  if (ev.finish) MarkFinished(s);
  Send(s.request, std::move(ev));
}

void Engine::Impl::FillTopTokens(GenerationEvent& ev) const {
  ev.top.reserve(top_.size());
  for (const TokenLogprob& t : top_) {
    TopToken& alt = ev.top.emplace_back();
    alt.id = t.id;
    alt.logprob = t.logprob;
    if (tokenizer_ != nullptr) {
      alt.text = Detokenizer::StandaloneText(*tokenizer_, t.id);
      alt.special = Detokenizer::IsSpecial(tokenizer_, t.id);
    }
  }
}

// The text `token` adds and whether it ends the sequence (see FinishReason for what each
// reason's event carries).
std::optional<FinishReason> Engine::Impl::TakeText(Sequence& s, int32_t token, std::string& text) {
  const bool allow_stop = s.stop.MinReached(s.generated);
  if (allow_stop && s.stop.IsStopToken(token)) {
    FlushText(s, text);
    return FinishReason::kEosToken;
  }
  std::string piece;
  s.detokenizer.Push(token, piece);
  if (s.stop_text.Push(piece, allow_stop, text)) return FinishReason::kStopSequence;
  if (s.stop.LengthReached(s.generated)) {
    return FlushText(s, text) ? FinishReason::kStopSequence : FinishReason::kLength;
  }
  return std::nullopt;
}

// End of text: releases buffered bytes and held-back text. True when the released bytes
// complete a stop sequence.
bool Engine::Impl::FlushText(Sequence& s, std::string& text) {
  std::string tail;
  s.detokenizer.Flush(tail);
  if (s.stop_text.Push(tail, s.stop.MinReached(s.generated), text)) return true;
  s.stop_text.Flush(text);
  return false;
}

GenerationEvent Engine::Impl::BaseEvent(const Sequence& s) const {
  GenerationEvent ev;
  ev.choice = s.choice;
  ev.prompt_tokens = static_cast<int32_t>(s.prompt_len);
  ev.generated_tokens = s.generated;
  ev.speculated_tokens = static_cast<int32_t>(s.speculation.accepted);
  ev.seed = s.request.seed;
  ev.scheduled = s.first_scheduled;
  return ev;
}

void Engine::Impl::MarkFinished(Sequence& s) {
  kv_.Release(s.blocks);
  s.state = SequenceState::kFinished;
  if (--s.request.unfinished == 0) done_.push_back(s.request.id);
}

void Engine::Impl::Finish(Sequence& s, FinishReason reason, std::string_view error) {
  if (s.state == SequenceState::kFinished) return;
  MarkFinished(s);
  if (s.request.client_gone) return;
  GenerationEvent ev = BaseEvent(s);
  ev.finish = reason;
  ev.error = std::string(error);
  Send(s.request, std::move(ev));
}

void Engine::Impl::Send(RequestState& r, GenerationEvent&& event) {
  if (r.client_gone) return;
  bool alive = false;
  try {
    alive = r.sink(std::move(event));
  } catch (const std::exception& e) {
    log::Warn(StrCat("engine: event sink of request ", r.id, " threw: ", e.what()));
  } catch (...) {
    log::Warn(StrCat("engine: event sink of request ", r.id, " threw"));
  }
  if (alive) return;
  // The client is gone: its other choices stop now, silently, and free their blocks.
  r.client_gone = true;
  for (auto& seq : r.choices) Finish(*seq, FinishReason::kCancelled);
}

}  // namespace kiln
