// Synthetic prompts with GuideLLM's token-count distributions; item i depends only on the seed
// and i, so reruns send the same requests.
#include <random>

#include "bench/dataset.h"
#include "bench/synthetic_prompt.h"

namespace kiln::bench {
namespace {

uint64_t Mix(uint64_t a, uint64_t b) {  // splitmix64 of a combination: independent streams
  uint64_t z = a * 0x9E3779B97F4A7C15ULL + b + 0x632BE59BD9B4E019ULL;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

class SyntheticDataset : public Dataset {
 public:
  SyntheticDataset(const SyntheticDataSpec& spec, std::shared_ptr<const PromptTokenizer> tok)
      : spec_(spec), tokenizer_(std::move(tok)) {}

  const DataItem& Get(int64_t index) override {
    Prepare(index + 1);
    return items_[static_cast<size_t>(index)];
  }

  void Prepare(int64_t count) override {
    while (static_cast<int64_t>(items_.size()) < count) {
      items_.push_back(Make(static_cast<int64_t>(items_.size())));
    }
  }

  std::string description() const override {
    return "synthetic: prompt_tokens " + Describe(spec_.prompt) + ", output_tokens " +
           Describe(spec_.output) + "; tokenizer " + tokenizer_->description();
  }

 private:
  DataItem Make(int64_t index) const {
    std::mt19937_64 rng(Mix(spec_.seed, static_cast<uint64_t>(index)));
    DataItem item;
    const int64_t prompt_tokens = SampleTokenCount(spec_.prompt, rng);
    SyntheticPrompt prompt = MakeSyntheticPrompt(*tokenizer_, prompt_tokens, rng());
    item.prompt = std::move(prompt.text);
    item.prompt_tokens = prompt.tokens;
    if (spec_.output.mean > 0 || spec_.output.min > 0) {
      item.output_tokens = std::max<int64_t>(1, SampleTokenCount(spec_.output, rng));
    }
    return item;
  }

  SyntheticDataSpec spec_;
  std::shared_ptr<const PromptTokenizer> tokenizer_;
  std::vector<DataItem> items_;
};

}  // namespace

std::unique_ptr<Dataset> MakeSyntheticDataset(const SyntheticDataSpec& spec,
                                              std::shared_ptr<const PromptTokenizer> tokenizer) {
  return std::make_unique<SyntheticDataset>(spec, std::move(tokenizer));
}

}  // namespace kiln::bench
