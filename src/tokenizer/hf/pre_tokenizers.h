// tokenizer.json "pre_tokenizer": ByteLevel, Split, Metaspace, Whitespace, WhitespaceSplit,
// BertPreTokenizer, Digits, Punctuation and Sequence. Each step splits every current piece.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "tokenizer/hf/json_fields.h"
#include "tokenizer/hf/split.h"

namespace kiln::hf {

class PreTokenizerStep {
 public:
  virtual ~PreTokenizerStep() = default;
  // Replaces the pieces by their sub-pieces (and may rewrite them, as ByteLevel's byte mapping).
  virtual void Apply(std::vector<Piece>* pieces) const = 0;
};

// nullptr for null. Throws kiln::Error naming `where` on bad input.
std::unique_ptr<PreTokenizerStep> MakePreTokenizer(const Json& j, const std::string& where,
                                                   int depth = 0);

// Rewrites each byte as GPT-2's printable stand-in character (ByteLevel's last step).
std::string ByteLevelMap(std::string_view s);

}  // namespace kiln::hf
