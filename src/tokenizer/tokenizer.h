// Text <-> token ids. Built from a GGUF vocabulary (tokenizer.ggml.*) or a Hugging Face
// tokenizer.json (+ tokenizer_config.json); LoadTokenizer (load_tokenizer.h) picks one for a
// path. Knows nothing of HTTP or the engine.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace kiln {

class GgufFile;

// A vocabulary as plain vectors: what tokenizer.ggml.* holds in a GGUF. FromGguf fills one.
struct VocabSpec {
  std::string source;  // for error messages (the file)
  std::string model;   // tokenizer.ggml.model: "llama" (SentencePiece) or "gpt2" (byte-level BPE)
  std::string pre;     // tokenizer.ggml.pre (gpt2 only); empty = "default"
  std::vector<std::string> tokens;
  std::vector<float> scores;         // empty = all 0
  std::vector<int32_t> token_types;  // 1 normal, 2 unknown, 3 control, 4 user-defined, 5 unused,
                                     // 6 byte; empty = all normal
  std::vector<std::string> merges;   // gpt2: "left right", rank = index
  // tokenizer.ggml.<x>_token_id; unset (or out of range) = the model type's default.
  std::optional<int64_t> bos_id, eos_id, eot_id, eom_id, unk_id, pad_id;
  std::optional<int64_t> fim_pre_id, fim_suf_id, fim_mid_id, fim_pad_id, fim_rep_id, fim_sep_id;
  std::optional<bool> add_bos, add_eos, add_space_prefix;  // tokenizer.ggml.add_*
  std::string general_name;  // general.name (llama.cpp keys a few token attributes on it)
  std::string architecture;  // general.architecture
};

// One special token of a SpecialLayout, with the token type id (segment id) it gets.
struct LayoutToken {
  int32_t id = -1;
  int32_t type_id = 0;
  bool operator==(const LayoutToken&) const = default;
};

// The special tokens a post-processor puts around one sequence or a pair, and the token type
// ids of every part, as tokenizer.json's "post_processor" defines them (HF's TemplateProcessing
// pieces each carry their own type id, so a run may differ from the sequence next to it).
// Encoder callers tokenize A and B with Encode(text, false), truncate them, then assemble
// (pair_encoding.h): the specials are not in A and B, so truncation never cuts them.
struct SpecialLayout {
  // Single: single_before + A + single_after; A's tokens get single_type.
  std::vector<LayoutToken> single_before, single_after;
  int32_t single_type = 0;
  // Pair: pair_before + A + pair_middle + B + pair_after; A's tokens get type_a, B's type_b.
  std::vector<LayoutToken> pair_before, pair_middle, pair_after;
  int32_t type_a = 0;
  int32_t type_b = 0;
  bool operator==(const SpecialLayout&) const = default;
};

// One token of EncodeWords: its id, the index of the pre-tokenizer word it came from (HF's
// encoding.word_ids()) and that word's byte range [begin, end) in the original text (HF's
// encoding.word_to_chars(word), in UTF-8 bytes instead of characters).
struct WordSpan {
  int32_t id = -1;
  int32_t word = 0;
  uint32_t begin = 0;
  uint32_t end = 0;
  bool operator==(const WordSpan&) const = default;
};

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;

  // From tokenizer.ggml.* metadata (model "llama" = SentencePiece with scores, "gpt2" = byte-level
  // BPE with merges). Throws kiln::Error naming the file when the vocabulary is missing or bad.
  static std::unique_ptr<Tokenizer> FromGguf(const GgufFile& gguf);
  // Same from plain vectors (tests, other containers). Throws kiln::Error when malformed.
  static std::unique_ptr<Tokenizer> FromVocab(const VocabSpec& spec);
  // From the text of a tokenizer.json and of its tokenizer_config.json ("" when none), with the
  // HF tokenizers library's semantics; `source` names the file in errors. Throws kiln::Error
  // naming the field on malformed input.
  static std::unique_ptr<Tokenizer> FromHfJson(std::string_view tokenizer_json,
                                               std::string_view config_json,
                                               const std::string& source);

  // add_special: prepend BOS (when the vocabulary asks for it) / append EOS like llama.cpp's
  // llama_tokenize(add_special=true). Special-token text in `text` is matched as special
  // tokens when parse_special is true.
  virtual std::vector<int32_t> Encode(std::string_view text, bool add_special,
                                      bool parse_special = false) const = 0;

  // Concatenated text of the ids (leading-space rules as llama.cpp's detokenize).
  // skip_special = true is llama_detokenize(remove_special=true, unparse_special=false): control
  // and unknown tokens give no text. false is (remove_special=false, unparse_special=true):
  // they give their text. Throws kiln::Error on an id outside the vocabulary.
  virtual std::string Decode(std::span<const int32_t> ids, bool skip_special = true) const = 0;

  // Raw bytes of one token as it appears in generated text (may be a partial UTF-8 sequence);
  // empty for control and unknown tokens (llama_token_to_piece with special=false).
  virtual std::string TokenPiece(int32_t id) const = 0;
  // The token's vocabulary string as stored ("Ġthe" in byte-level BPE, "▁the" in SentencePiece).
  virtual std::string_view TokenText(int32_t id) const = 0;

  virtual int32_t vocab_size() const = 0;
  virtual int32_t bos_id() const = 0;  // -1 when none
  virtual int32_t eos_id() const = 0;  // -1 when none
  // Control, user-defined or unknown: the tokens parse_special matches as text.
  virtual bool IsSpecial(int32_t id) const = 0;
  virtual bool IsControl(int32_t id) const = 0;
  // Whether Encode(add_special=true) prepends BOS / appends EOS.
  virtual bool AddsBos() const = 0;
  virtual bool AddsEos() const = 0;
  // Ids that end generation (eos plus end-of-turn tokens such as <|im_end|>, <|eot_id|>).
  virtual std::vector<int32_t> StopIds() const = 0;
  // The chat template that came with the tokenizer (tokenizer_config.json); "" when none.
  virtual std::string ChatTemplateSource() const { return {}; }

  // The specials Encode(add_special = true) puts around one sequence, and the pair layout.
  // Default (GGUF vocabularies, which define no pair): single is BOS/EOS as Encode adds them;
  // pair is the same around A and B back to back, all type ids 0.
  virtual SpecialLayout Layout() const;
  // The tokens of Encode(text, false) (same ids, no specials) with their words. Tokenizers
  // from tokenizer.json give what HF's word_ids() / word_to_chars() give (see hf_tokenizer.cc
  // for the few cases that are approximated). The default (GGUF vocabularies, whose
  // pre-tokenizers keep no offsets) walks the token pieces over the text: a word starts at a
  // piece that begins with a space, at a special token and after one; its span leaves out
  // leading whitespace. Offsets never exceed text.size().
  virtual std::vector<WordSpan> EncodeWords(std::string_view text) const;
};

}  // namespace kiln
