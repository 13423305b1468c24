// Pre-tokenizer of byte-level BPE vocabularies: splits text into words before BPE merges, with
// the regex lists llama.cpp uses for each tokenizer.ggml.pre name and llama.cpp's splitting
// semantics (each regex in turn splits every current piece into its matches and the text
// between them; \p{..} classes and \s follow llama.cpp's Unicode tables).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace kiln::tok {

// What a tokenizer.ggml.pre name selects, besides the regexes.
struct PreTypeInfo {
  std::vector<std::string> regexes;
  bool ignore_merges = false;  // whole word looked up in the vocabulary before merging
  bool add_bos = false;        // default for tokenizer.ggml.add_bos_token
  bool clean_spaces = true;    // detokenizer's clean-up of " ." " ," " 's" ...
  bool no_bos = false;         // vocabulary has no BOS unless the metadata names one
};

// nullptr for names llama.cpp does not know (or that Kiln does not support).
const PreTypeInfo* FindPreType(std::string_view name);

// Text after pre-tokenization: `text` is the input re-encoded (invalid UTF-8 bytes replaced by
// U+FFFD), `ends` the end byte offset of each word in `text` (no empty words).
struct PreTokenized {
  std::string text;
  std::vector<uint32_t> ends;
};

class PreTokenizer {
 public:
  // Throws kiln::Error when a regex does not compile.
  explicit PreTokenizer(const std::vector<std::string>& regexes);
  ~PreTokenizer();
  PreTokenizer(const PreTokenizer&) = delete;
  PreTokenizer& operator=(const PreTokenizer&) = delete;

  // Thread-safe.
  void Split(std::string_view text, PreTokenized* out) const;

 private:
  struct Step;
  std::vector<std::unique_ptr<Step>> steps_;
  bool need_collapsed_ = false;
  bool need_codepoint_text_ = false;
};

// The two splitters llama.cpp hand-codes (exposed for tests). Each takes code points and the
// current piece lengths and returns the new piece lengths.
std::vector<uint32_t> SplitGpt2(const std::vector<uint32_t>& cpts,
                                const std::vector<uint32_t>& pieces);
std::vector<uint32_t> SplitLlama3(const std::vector<uint32_t>& cpts,
                                  const std::vector<uint32_t>& pieces);

}  // namespace kiln::tok
