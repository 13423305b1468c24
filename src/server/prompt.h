// Turning request text into checked engine input: tokenization (with TGI's keep-the-last-N
// truncation), token-id range checks, the token budget, and the mapping of api options onto
// the engine's GenerationRequest.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "api/generation_options.h"
#include "api/limits.h"
#include "engine/request.h"
#include "tokenizer/tokenizer.h"

namespace kiln {

// Encodes `text` with special tokens added and parsed (as TGI's and llama.cpp's servers do);
// a BOS doubled by a template that writes its own is dropped. Throws ApiError 422 when the
// result is empty.
std::vector<int32_t> EncodePrompt(const Tokenizer& tokenizer, std::string_view text);

// Keeps the last `truncate` tokens when set.
void Truncate(std::vector<int32_t>& ids, const api::GenerationOptions& options);

// Throws ApiError 422 when an id is outside the vocabulary. `what` names the field.
void CheckTokenIds(std::span<const int32_t> ids, int64_t vocab_size, std::string_view what);

// The engine request for `prompt`, with max_new_tokens resolved against the limits (throws
// ApiError with TGI's messages when over budget).
GenerationRequest MakeEngineRequest(const api::GenerationOptions& options,
                                    std::vector<int32_t> prompt,
                                    const api::ValidationLimits& limits);

}  // namespace kiln
