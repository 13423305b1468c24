// Text <-> token ids. Built from a GGUF vocabulary (tokenizer.ggml.*) now; tokenizer.json
// support grows here (see the tokenizer issue). Knows nothing of HTTP or the engine.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace kiln {

class GgufFile;

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;

  // From tokenizer.ggml.* metadata (model "llama" = SentencePiece with scores, "gpt2" = byte-level
  // BPE with merges). Throws kiln::Error naming the file when the vocabulary is missing or bad.
  static std::unique_ptr<Tokenizer> FromGguf(const GgufFile& gguf);

  // add_special: prepend BOS (when the vocabulary asks for it) / append EOS like llama.cpp's
  // llama_tokenize(add_special=true). Special-token text in `text` is matched as special
  // tokens when parse_special is true.
  virtual std::vector<int32_t> Encode(std::string_view text, bool add_special,
                                      bool parse_special = false) const = 0;

  // Concatenated text of the ids (leading-space rules as llama.cpp's detokenize).
  virtual std::string Decode(std::span<const int32_t> ids, bool skip_special = true) const = 0;

  // Raw bytes of one token as it appears in generated text (may be a partial UTF-8 sequence).
  virtual std::string TokenPiece(int32_t id) const = 0;

  virtual int32_t vocab_size() const = 0;
  virtual int32_t bos_id() const = 0;  // -1 when none
  virtual int32_t eos_id() const = 0;  // -1 when none
  virtual bool IsSpecial(int32_t id) const = 0;
  // Ids that end generation (eos plus end-of-turn tokens such as <|im_end|>, <|eot_id|>).
  virtual std::vector<int32_t> StopIds() const = 0;
};

}  // namespace kiln
