// The model's tokenizer, read from a GGUF vocabulary through the tokenizer layer.
#include "bench/prompt_tokenizer.h"
#include "formats/gguf.h"
#include "tokenizer/tokenizer.h"

namespace kiln::bench {
namespace {

class GgufPromptTokenizer : public PromptTokenizer {
 public:
  explicit GgufPromptTokenizer(const std::string& path) : path_(path) {
    GgufFile gguf(path);
    tokenizer_ = Tokenizer::FromGguf(gguf);
  }

  std::vector<int32_t> Encode(std::string_view text) const override {
    return tokenizer_->Encode(text, /*add_special=*/false);
  }
  std::string Decode(const std::vector<int32_t>& ids) const override {
    return tokenizer_->Decode(ids, /*skip_special=*/true);
  }
  int64_t CountPromptTokens(std::string_view text) const override {
    return static_cast<int64_t>(tokenizer_->Encode(text, /*add_special=*/true).size());
  }
  bool exact() const override { return true; }
  std::string description() const override { return "model tokenizer from " + path_; }

 private:
  std::string path_;
  std::unique_ptr<Tokenizer> tokenizer_;
};

}  // namespace

std::unique_ptr<PromptTokenizer> LoadGgufTokenizer(const std::string& gguf_path) {
  return std::make_unique<GgufPromptTokenizer>(gguf_path);
}

}  // namespace kiln::bench
