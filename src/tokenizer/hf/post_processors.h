// tokenizer.json "post_processor": what Encode(add_special = true) adds around the ids of one
// sequence. TemplateProcessing, BertProcessing, RobertaProcessing, ByteLevel (ids unchanged)
// and Sequence.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tokenizer/hf/json_fields.h"

namespace kiln::hf {

class PostProcessor {
 public:
  virtual ~PostProcessor() = default;
  virtual void Process(std::vector<int32_t>* ids) const = 0;
};

// nullptr for null. `vocab_size` bounds the ids. Throws kiln::Error naming `where`.
std::unique_ptr<PostProcessor> MakePostProcessor(const Json& j, const std::string& where,
                                                 int64_t vocab_size, int depth = 0);

// Ids put before and after the sequence (an empty template has none).
class TemplatePostProcessor final : public PostProcessor {
 public:
  TemplatePostProcessor(std::vector<int32_t> before, std::vector<int32_t> after)
      : before_(std::move(before)), after_(std::move(after)) {}
  void Process(std::vector<int32_t>* ids) const override;

 private:
  std::vector<int32_t> before_, after_;
};

}  // namespace kiln::hf
