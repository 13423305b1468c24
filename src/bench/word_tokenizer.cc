// Whitespace words as tokens, for runs without --tokenizer.
#include <mutex>
#include <unordered_map>

#include "bench/prompt_tokenizer.h"

namespace kiln::bench {
namespace {

class WordTokenizer : public PromptTokenizer {
 public:
  std::vector<int32_t> Encode(std::string_view text) const override {
    std::vector<int32_t> ids;
    size_t i = 0;
    while (i < text.size()) {
      while (i < text.size() && IsSpace(text[i])) ++i;
      size_t j = i;
      while (j < text.size() && !IsSpace(text[j])) ++j;
      if (j > i) ids.push_back(Intern(text.substr(i, j - i)));
      i = j;
    }
    return ids;
  }

  std::string Decode(const std::vector<int32_t>& ids) const override {
    std::lock_guard<std::mutex> lock(mu_);
    std::string out;
    for (int32_t id : ids) {
      if (!out.empty()) out += ' ';
      out += words_[static_cast<size_t>(id)];
    }
    return out;
  }

  int64_t CountPromptTokens(std::string_view text) const override {
    return static_cast<int64_t>(Encode(text).size());
  }
  bool exact() const override { return false; }
  std::string description() const override {
    return "approximate: one token per whitespace-separated word (no --tokenizer given)";
  }

 private:
  static bool IsSpace(char c) { return c == ' ' || c == '\n' || c == '\t' || c == '\r'; }

  int32_t Intern(std::string_view word) const {
    std::lock_guard<std::mutex> lock(mu_);
    auto [it, inserted] = ids_.try_emplace(std::string(word), static_cast<int32_t>(words_.size()));
    if (inserted) words_.emplace_back(word);
    return it->second;
  }

  mutable std::mutex mu_;
  mutable std::unordered_map<std::string, int32_t> ids_;
  mutable std::vector<std::string> words_;
};

}  // namespace

std::unique_ptr<PromptTokenizer> MakeWordTokenizer() { return std::make_unique<WordTokenizer>(); }

}  // namespace kiln::bench
