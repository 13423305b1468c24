// Engine-internal state: a request (one Submit) and its choices, one Sequence each. Owned by
// the engine thread; nothing here is shared with other threads.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "engine/engine.h"
#include "engine/speculation.h"
#include "kv/kv_cache_manager.h"
#include "sampling/sampler.h"
#include "sampling/stop_criteria.h"
#include "sampling/stop_sequence_matcher.h"
#include "tokenizer/detokenizer.h"

namespace kiln {

struct RequestState;

enum class SequenceState { kWaiting, kRunning, kFinished };

struct Sequence {
  Sequence(RequestState& request, int32_t choice, std::span<const int32_t> eos_ids,
           const Tokenizer* tokenizer);

  RequestState& request;
  const int32_t choice;
  const int64_t prompt_len;
  // Prompt then generated tokens. [0, num_computed) have KV in `blocks`; the rest are fed next
  // (the whole prompt at first, then the one token sampled last, or everything after preemption).
  std::vector<int32_t> tokens;
  int64_t num_computed = 0;
  int32_t generated = 0;
  SequenceState state = SequenceState::kWaiting;
  BlockTable blocks;
  // When the scheduler first gave it a place in a step (end of its queue time); zero before.
  std::chrono::steady_clock::time_point first_scheduled{};
  // Tokens proposed to follow `tokens` in the next step (speculation.h); the scheduler drops
  // them when the step's budget or the KV pool is short.
  std::vector<int32_t> draft;
  SpeculationState speculation;
  // With a draft model: leading positions whose draft-model KV rows are written, and how many
  // draft tokens the draft model was fed this step (their rows stand where they are accepted).
  int64_t draft_computed = 0;
  int64_t draft_fed = 0;

  Sampler sampler;
  StopCriteria stop;
  Detokenizer detokenizer;
  StopSequenceMatcher stop_text;
};

struct RequestState {
  RequestState(Engine::RequestId id, GenerationRequest request, EventSink sink, uint64_t seed);

  const Engine::RequestId id;
  const GenerationRequest request;
  EventSink sink;
  const uint64_t seed;
  bool client_gone = false;  // the sink returned false: no more events
  int32_t unfinished = 0;    // choices not finished yet
  std::vector<std::unique_ptr<Sequence>> choices;
};

// A request with its n choices created (all waiting).
std::unique_ptr<RequestState> MakeRequestState(Engine::RequestId id, GenerationRequest request,
                                               EventSink sink, uint64_t seed,
                                               std::span<const int32_t> eos_ids,
                                               const Tokenizer* tokenizer);

}  // namespace kiln
