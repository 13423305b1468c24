#include "engine/sequence.h"

#include <utility>

namespace kiln {

Sequence::Sequence(RequestState& request, int32_t choice, std::span<const int32_t> eos_ids,
                   const Tokenizer* tokenizer)
    : request(request),
      choice(choice),
      prompt_len(static_cast<int64_t>(request.request.prompt.size())),
      sampler(request.request.sampling, request.seed, static_cast<uint64_t>(choice),
              request.request.prompt),
      stop(request.request.stop, eos_ids),
      detokenizer(tokenizer, request.request.skip_special_tokens),
      stop_text(request.request.stop.stop_sequences) {
  // Reserved once: appending generated tokens never reallocates.
  tokens.reserve(prompt_len + request.request.stop.max_new_tokens);
  tokens.assign(request.request.prompt.begin(), request.request.prompt.end());
}

RequestState::RequestState(Engine::RequestId id, GenerationRequest request, EventSink sink,
                           uint64_t seed)
    : id(id), request(std::move(request)), sink(std::move(sink)), seed(seed) {}

std::unique_ptr<RequestState> MakeRequestState(Engine::RequestId id, GenerationRequest request,
                                               EventSink sink, uint64_t seed,
                                               std::span<const int32_t> eos_ids,
                                               const Tokenizer* tokenizer) {
  auto state = std::make_unique<RequestState>(id, std::move(request), std::move(sink), seed);
  const int32_t n = state->request.n;
  state->choices.reserve(n);
  for (int32_t c = 0; c < n; ++c) {
    state->choices.push_back(std::make_unique<Sequence>(*state, c, eos_ids, tokenizer));
  }
  state->unfinished = n;
  return state;
}

}  // namespace kiln
