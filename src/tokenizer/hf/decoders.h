// tokenizer.json "decoder": ByteLevel, Metaspace, ByteFallback, Fuse, Strip, Replace, WordPiece,
// BPEDecoder and Sequence. Each step maps the list of token strings to a new list (the HF
// tokenizers library's decode_chain); the decoded text is the concatenation.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "tokenizer/hf/json_fields.h"

namespace kiln::hf {

struct DecodeMode {
  // Decoding one token as a piece of a stream (Tokenizer::TokenPiece): it is never the first
  // token (keeps its leading space), and bytes stay raw (a piece may be part of a character).
  bool piece = false;
};

class Decoder {
 public:
  virtual ~Decoder() = default;
  virtual void Decode(std::vector<std::string>* tokens, DecodeMode mode) const = 0;
};

// transformers' clean_up_tokenization (" ." -> ".", " 's" -> "'s", ...); with do_not, also
// " do not" -> " don't" as the WordPiece decoder's cleanup does.
void CleanUpSpaces(std::string* text, bool do_not = false);

// nullptr for null. Throws kiln::Error naming `where` on bad input.
std::unique_ptr<Decoder> MakeDecoder(const Json& j, const std::string& where, int depth = 0);

}  // namespace kiln::hf
