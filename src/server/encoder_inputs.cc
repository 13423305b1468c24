#include "server/encoder_inputs.h"

#include "api/api_error.h"
#include "tokenizer/pair_encoding.h"
#include "util/error.h"

namespace kiln {
namespace {

api::ApiError TooLong(std::string_view field, int64_t max, int64_t given) {
  return api::ApiError(413, "validation",
                       StrCat("Input validation error: `", field, "` must have less than ", max,
                              " tokens. Given: ", given),
                       std::string(field));
}

void Cut(std::vector<int32_t>& ids, size_t keep, bool left) {
  if (ids.size() <= keep) return;
  if (left) {
    ids.erase(ids.begin(), ids.end() - static_cast<std::ptrdiff_t>(keep));
  } else {
    ids.resize(keep);
  }
}

EncoderRequest FromEncoded(EncodedInput in) {
  EncoderRequest r;
  r.tokens = std::move(in.ids);
  r.type_ids = std::move(in.type_ids);
  return r;
}

}  // namespace

EncoderRequest EncodeTextInput(const Tokenizer& tokenizer, std::string_view text,
                               const api::TruncateOptions& truncate,
                               const EncoderInputLimits& limits, std::string_view field) {
  const SpecialLayout layout = tokenizer.Layout();
  std::vector<int32_t> ids = tokenizer.Encode(text, /*add_special=*/false);
  const auto specials = static_cast<int64_t>(NumSpecialTokens(layout, /*pair=*/false));
  const int64_t room = limits.max_tokens - specials;
  const auto given = static_cast<int64_t>(ids.size()) + specials;
  if (given > limits.max_tokens) {
    if (!truncate.truncate || room <= 0) throw TooLong(field, limits.max_tokens, given);
    Cut(ids, static_cast<size_t>(room), truncate.left);
  }
  EncoderRequest r = FromEncoded(AssembleSingle(layout, ids));
  if (r.tokens.empty()) throw api::ApiError(400, "empty", StrCat("`", field, "` has no tokens"));
  return r;
}

EncoderRequest EncodePairInput(const Tokenizer& tokenizer, std::string_view a, std::string_view b,
                               const api::TruncateOptions& truncate,
                               const EncoderInputLimits& limits, std::string_view field) {
  const SpecialLayout layout = tokenizer.Layout();
  std::vector<int32_t> first = tokenizer.Encode(a, false), second = tokenizer.Encode(b, false);
  const auto specials = static_cast<int64_t>(NumSpecialTokens(layout, /*pair=*/true));
  const auto given = static_cast<int64_t>(first.size() + second.size()) + specials;
  if (given > limits.max_tokens) {
    const int64_t room = limits.max_tokens - specials;
    if (!truncate.truncate || room < 2) throw TooLong(field, limits.max_tokens, given);
    // longest_first: one token at a time from whichever part is longer.
    size_t keep_a = first.size(), keep_b = second.size();
    while (static_cast<int64_t>(keep_a + keep_b) > room) {
      if (keep_a > keep_b) {
        --keep_a;
      } else {
        --keep_b;
      }
    }
    Cut(first, keep_a, truncate.left);
    Cut(second, keep_b, truncate.left);
  }
  return FromEncoded(AssemblePair(layout, first, second));
}

EncoderRequest IdsInput(std::vector<int32_t> ids, const EncoderInputLimits& limits,
                        std::string_view field) {
  const auto given = static_cast<int64_t>(ids.size());
  if (given > limits.max_tokens) throw TooLong(field, limits.max_tokens, given);
  EncoderRequest r;
  r.tokens = std::move(ids);
  return r;
}

}  // namespace kiln
