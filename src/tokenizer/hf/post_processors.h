// tokenizer.json "post_processor": the specials Encode(add_special = true) adds around one
// sequence, the layout of a pair (for encoders), and the token-offset trimming that ByteLevel
// and RobertaProcessing do (trim_offsets). TemplateProcessing, BertProcessing,
// RobertaProcessing, ByteLevel (ids unchanged) and Sequence, flattened into one PostProcessor.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tokenizer/hf/json_fields.h"
#include "tokenizer/tokenizer.h"

namespace kiln::hf {

class PostProcessor {
 public:
  // `trim_passes`: one entry per trim_offsets pass in the order HF runs them, each holding
  // that pass's add_prefix_space (which spares the first token's one leading space).
  explicit PostProcessor(SpecialLayout layout, std::vector<bool> trim_passes = {})
      : layout_(std::move(layout)), trim_passes_(std::move(trim_passes)) {}

  // single_before + ids + single_after.
  void Process(std::vector<int32_t>* ids) const;
  const SpecialLayout& layout() const { return layout_; }
  const std::vector<bool>& trim_passes() const { return trim_passes_; }

 private:
  SpecialLayout layout_;
  std::vector<bool> trim_passes_;
};

// What HF does without a post-processor: no specials; a pair's second text has type id 1
// (the library encodes it with type id 1 and nothing overwrites it).
SpecialLayout PlainLayout();

// nullptr for null. `vocab_size` bounds the ids. Throws kiln::Error naming `where`.
std::unique_ptr<PostProcessor> MakePostProcessor(const Json& j, const std::string& where,
                                                 int64_t vocab_size, int depth = 0);

// The template transformers' Llama-style tokenizer classes build from add_bos_token /
// add_eos_token (ids < 0: not added): "bos:0 $A:0 eos:0" and, for a pair, then
// "bos:1 $B:1 eos:1".
std::unique_ptr<PostProcessor> MakeBosEosPostProcessor(int32_t bos, int32_t eos);

}  // namespace kiln::hf
