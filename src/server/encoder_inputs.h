// Turns texts into the token sequences an encoder reads: the tokenizer's ids with the model's
// special tokens around one text or a pair ([CLS] a [SEP] b [SEP] for BERT), truncated to the
// model's length when the request allows it, else refused with TEI's 413.
#pragma once

#include <cstdint>
#include <string_view>

#include "api/encoder_request.h"
#include "engine/encoder_engine.h"
#include "tokenizer/tokenizer.h"

namespace kiln {

struct EncoderInputLimits {
  int64_t max_tokens = 512;  // the model's longest input, special tokens included
};

// One text. kiln::api::ApiError 413 when it is too long and truncation is off; 400 when it has
// no token at all.
EncoderRequest EncodeTextInput(const Tokenizer& tokenizer, std::string_view text,
                               const api::TruncateOptions& truncate,
                               const EncoderInputLimits& limits, std::string_view field);
// A pair (query and passage, question and context); truncation takes tokens from the longer of
// the two first, as the tokenizers library's longest_first strategy does.
EncoderRequest EncodePairInput(const Tokenizer& tokenizer, std::string_view a, std::string_view b,
                               const api::TruncateOptions& truncate,
                               const EncoderInputLimits& limits, std::string_view field);
// Token ids a client sent (OpenAI's input as ids), as they are: no special tokens added.
EncoderRequest IdsInput(std::vector<int32_t> ids, const EncoderInputLimits& limits,
                        std::string_view field);

}  // namespace kiln
