// tokenizer.json "normalizer": NFC/NFD/NFKC/NFKD, Lowercase, StripAccents, Replace, Prepend,
// Strip, BertNormalizer and Sequence, with the HF tokenizers library's semantics. The
// normalizer runs on each stretch of text between added tokens.
#pragma once

#include <memory>
#include <string>

#include "tokenizer/hf/alignment.h"
#include "tokenizer/hf/json_fields.h"

namespace kiln::hf {

class Normalizer {
 public:
  virtual ~Normalizer() = default;
  // `s` is valid UTF-8 and stays so.
  virtual void Normalize(std::string* s) const = 0;
  // The same text as Normalize, with `align` (one entry per byte of *s) carried through as
  // HF's NormalizedString does. The default aligns character by character
  // (AlignByCharacters); Prepend, Strip, Replace and Sequence align exactly.
  virtual void NormalizeAligned(std::string* s, Alignment* align) const;
};

// From the JSON object; nullptr for null. Throws kiln::Error naming `where` on bad input.
std::unique_ptr<Normalizer> MakeNormalizer(const Json& j, const std::string& where, int depth = 0);

}  // namespace kiln::hf
