#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <random>
#include <set>

#include "bench/data_spec.h"
#include "bench/dataset.h"
#include "bench/prompt_tokenizer.h"
#include "bench/synthetic_prompt.h"
#include "bench/text_source.h"
#include "util/error.h"

namespace kiln::bench {
namespace {

// A tokenizer whose counts change when a word is cut: words of up to 4 characters are one
// token, longer ones two characters per token; a word-initial piece carries the space. Like a
// real vocabulary, a prefix of a token sequence does not always re-encode to the same length.
// Adds a BOS, as llama vocabularies do.
class FakeTokenizer : public PromptTokenizer {
 public:
  std::vector<int32_t> Encode(std::string_view text) const override {
    std::vector<int32_t> ids;
    size_t i = 0;
    bool first = true;
    while (i < text.size()) {
      while (i < text.size() && text[i] == ' ') ++i;
      size_t j = text.find(' ', i);
      if (j == std::string_view::npos) j = text.size();
      if (j == i) break;
      std::string_view word = text.substr(i, j - i);
      const size_t step = word.size() <= 4 ? word.size() : 2;
      for (size_t k = 0; k < word.size(); k += step) {
        std::string piece(word.substr(k, step));
        if (k == 0 && !first) piece = " " + piece;
        ids.push_back(Intern(piece));
      }
      first = false;
      i = j;
    }
    return ids;
  }
  std::string Decode(const std::vector<int32_t>& ids) const override {
    std::string out;
    for (int32_t id : ids) out += pieces_[static_cast<size_t>(id)];
    if (!out.empty() && out.front() == ' ') out.erase(0, 1);
    return out;
  }
  int64_t CountPromptTokens(std::string_view text) const override {
    return static_cast<int64_t>(Encode(text).size()) + 1;
  }
  bool exact() const override { return true; }
  std::string description() const override { return "fake"; }

 private:
  int32_t Intern(const std::string& piece) const {
    auto [it, added] = ids_.try_emplace(piece, static_cast<int32_t>(pieces_.size()));
    if (added) pieces_.push_back(piece);
    return it->second;
  }
  mutable std::map<std::string, int32_t> ids_;
  mutable std::vector<std::string> pieces_;
};

TEST(SyntheticPrompt, ExactTokenCountsUnderTheTokenizer) {
  FakeTokenizer tokenizer;
  for (int64_t n = 2; n <= 400; n += 7) {
    for (uint64_t seed : {1u, 2u, 3u}) {
      SyntheticPrompt p = MakeSyntheticPrompt(tokenizer, n, seed);
      EXPECT_EQ(p.tokens, n) << "n=" << n << " seed=" << seed;
      EXPECT_EQ(tokenizer.CountPromptTokens(p.text), n);
    }
  }
  EXPECT_EQ(MakeSyntheticPrompt(tokenizer, 4096, 9).tokens, 4096);
}

// The real tokenizer layer on a real GGUF vocabulary (llama SentencePiece with BOS, 512 tokens:
// most words split into several pieces).
TEST(SyntheticPrompt, ExactUnderAGgufVocabulary) {
  auto tokenizer = LoadGgufTokenizer(std::string(KILN_TEST_DATA_DIR) + "/models/stories260K.gguf");
  EXPECT_TRUE(tokenizer->exact());
  EXPECT_EQ(tokenizer->CountPromptTokens(""), 1);  // BOS
  for (int64_t n : {2, 3, 17, 100, 513, 2048}) {
    SyntheticPrompt p = MakeSyntheticPrompt(*tokenizer, n, static_cast<uint64_t>(n));
    EXPECT_EQ(p.tokens, n);
    EXPECT_EQ(tokenizer->CountPromptTokens(p.text), n);
  }
}

TEST(SyntheticPrompt, DifferentSeedsShareNoPrefix) {
  auto tokenizer = MakeWordTokenizer();
  SyntheticPrompt a = MakeSyntheticPrompt(*tokenizer, 64, 1);
  SyntheticPrompt b = MakeSyntheticPrompt(*tokenizer, 64, 2);
  EXPECT_NE(a.text.substr(0, 40), b.text.substr(0, 40));
  EXPECT_EQ(a.text, MakeSyntheticPrompt(*tokenizer, 64, 1).text);  // deterministic
}

TEST(WordTokenizer, CountsWords) {
  auto tokenizer = MakeWordTokenizer();
  EXPECT_EQ(tokenizer->CountPromptTokens("  the quick\tbrown\nfox "), 4);
  EXPECT_FALSE(tokenizer->exact());
  EXPECT_EQ(MakeSyntheticPrompt(*tokenizer, 123, 5).tokens, 123);
  EXPECT_EQ(tokenizer->Decode(tokenizer->Encode("a b  c")), "a b c");
}

TEST(TextSource, WordsAndDeterminism) {
  const std::string text = GenerateWords(3, 50);
  EXPECT_EQ(std::count(text.begin(), text.end(), ' '), 49);
  EXPECT_EQ(text, GenerateWords(3, 50));
  EXPECT_NE(text, GenerateWords(4, 50));
}

TEST(DataSpec, ParsesGuideLlmKeys) {
  SyntheticDataSpec s = ParseSyntheticSpec(
      "prompt_tokens=256,prompt_tokens_stdev=32,prompt_tokens_min=128,prompt_tokens_max=512,"
      "output_tokens=64,output_tokens_stdev=8,output_tokens_min=1,output_tokens_max=100,samples=5");
  EXPECT_EQ(s.prompt.mean, 256);
  EXPECT_DOUBLE_EQ(s.prompt.stdev, 32);
  EXPECT_EQ(s.prompt.min, 128);
  EXPECT_EQ(s.prompt.max, 512);
  EXPECT_EQ(s.output.mean, 64);
  EXPECT_DOUBLE_EQ(s.output.stdev, 8);
  EXPECT_EQ(s.output.min, 1);
  EXPECT_EQ(s.output.max, 100);
  EXPECT_EQ(s.samples, 5);
}

TEST(DataSpec, AcceptsTheOlderEmulatedKeysAndJson) {
  SyntheticDataSpec s = ParseSyntheticSpec(
      "prompt_tokens=128,prompt_tokens_variance=10,generated_tokens=32,"
      "generated_tokens_variance=4,generated_tokens_min=16,generated_tokens_max=48");
  EXPECT_DOUBLE_EQ(s.prompt.stdev, 10);
  EXPECT_EQ(s.output.mean, 32);
  EXPECT_DOUBLE_EQ(s.output.stdev, 4);
  EXPECT_EQ(s.output.min, 16);
  EXPECT_EQ(s.output.max, 48);
  SyntheticDataSpec j = ParseSyntheticSpec(R"({"prompt_tokens": 64, "output_tokens": 8})");
  EXPECT_EQ(j.prompt.mean, 64);
  EXPECT_EQ(j.output.mean, 8);
}

TEST(DataSpec, RejectsBadInput) {
  EXPECT_THROW(ParseSyntheticSpec("output_tokens=5"), Error);  // prompt_tokens required
  EXPECT_THROW(ParseSyntheticSpec("prompt_tokens=abc"), Error);
  EXPECT_THROW(ParseSyntheticSpec("prompt_tokens=10,colour=3"), Error);
  EXPECT_THROW(ParseSyntheticSpec("prompt_tokens=10,prompt_tokens_min=9,prompt_tokens_max=3"),
               Error);
  EXPECT_THROW(ParseSyntheticSpec("prompt_tokens=1.5"), Error);
  EXPECT_THROW(ParseSyntheticSpec("prompt_tokens"), Error);
}

TEST(DataSpec, FileOrSynthetic) {
  EXPECT_TRUE(ParseDataArg("prompts.jsonl").is_file);
  EXPECT_FALSE(ParseDataArg("prompt_tokens=5").is_file);
}

TEST(SampleTokenCount, GuideLlmRules) {
  std::mt19937_64 rng(1);
  TokenCountSpec fixed{100, 0, -1, -1};
  for (int i = 0; i < 10; ++i) EXPECT_EQ(SampleTokenCount(fixed, rng), 100);

  TokenCountSpec uniform{100, 0, 50, 150};
  std::set<int64_t> seen;
  for (int i = 0; i < 5000; ++i) {
    const int64_t v = SampleTokenCount(uniform, rng);
    ASSERT_GE(v, 50);
    ASSERT_LE(v, 150);
    seen.insert(v);
  }
  EXPECT_EQ(seen.size(), 101u);  // every value in [min, max]

  TokenCountSpec normal{100, 10, -1, -1};  // bounds: 50 .. 150 (mean -/+ 5 stdev)
  double sum = 0, squares = 0;
  const int n = 20000;
  for (int i = 0; i < n; ++i) {
    const double v = static_cast<double>(SampleTokenCount(normal, rng));
    sum += v;
    squares += v * v;
  }
  const double mean = sum / n;
  EXPECT_NEAR(mean, 100, 0.5);
  EXPECT_NEAR(std::sqrt(squares / n - mean * mean), 10, 0.5);

  TokenCountSpec clamped{100, 50, 90, 110};
  for (int i = 0; i < 1000; ++i) {
    const int64_t v = SampleTokenCount(clamped, rng);
    ASSERT_TRUE(v >= 90 && v <= 110);
  }
}

TEST(SyntheticDataset, ItemsFollowTheSpecAndAreDeterministic) {
  SyntheticDataSpec spec = ParseSyntheticSpec("prompt_tokens=40,output_tokens=12");
  auto tokenizer = std::make_shared<FakeTokenizer>();
  auto a = MakeSyntheticDataset(spec, tokenizer);
  auto b = MakeSyntheticDataset(spec, tokenizer);
  a->Prepare(20);
  for (int64_t i = 0; i < 20; ++i) {
    const DataItem& item = a->Get(i);
    EXPECT_EQ(item.prompt_tokens, 40);
    EXPECT_EQ(tokenizer->CountPromptTokens(item.prompt), 40);
    EXPECT_EQ(item.output_tokens, 12);
    EXPECT_EQ(item.prompt, b->Get(i).prompt);
  }
  EXPECT_NE(a->Get(0).prompt, a->Get(1).prompt);
  EXPECT_NE(a->description().find("prompt_tokens 40"), std::string::npos);
}

TEST(SyntheticDataset, NoOutputTokensLeavesTheLengthToTheServer) {
  auto d = MakeSyntheticDataset(ParseSyntheticSpec("prompt_tokens=8"), MakeWordTokenizer());
  EXPECT_EQ(d->Get(0).output_tokens, -1);
}

TEST(FileDataset, JsonLinesWithPromptsMessagesAndLengths) {
  const std::string path = ::testing::TempDir() + "/bench_prompts.jsonl";
  {
    std::ofstream out(path);
    out << R"({"prompt": "hello there world", "output_tokens": 5})"
        << "\n\n"
        << R"({"messages": [{"role": "system", "content": "be brief"},)"
        << R"( {"role": "user", "content": "hi"}], "max_tokens": 3})"
        << "\n"
        << R"({"text": "plain"})"
        << "\n";
  }
  auto tokenizer = MakeWordTokenizer();
  auto d = LoadFileDataset(path, tokenizer.get());
  EXPECT_EQ(d->Get(0).prompt, "hello there world");
  EXPECT_EQ(d->Get(0).output_tokens, 5);
  EXPECT_EQ(d->Get(0).prompt_tokens, 3);
  EXPECT_EQ(d->Get(1).prompt, "be brief\nhi");
  EXPECT_NE(d->Get(1).messages_json.find("system"), std::string::npos);
  EXPECT_EQ(d->Get(1).output_tokens, 3);
  EXPECT_EQ(d->Get(2).output_tokens, -1);
  EXPECT_EQ(d->Get(3).prompt, "hello there world");  // cycles
}

TEST(FileDataset, ErrorsNameTheLine) {
  const std::string path = ::testing::TempDir() + "/bench_bad.jsonl";
  {
    std::ofstream out(path);
    out << R"({"prompt": "ok"})"
        << "\n"
        << "{not json"
        << "\n";
  }
  try {
    LoadFileDataset(path, nullptr);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(":2"), std::string::npos) << e.what();
  }
  EXPECT_THROW(LoadFileDataset(::testing::TempDir() + "/missing.jsonl", nullptr), Error);
}

}  // namespace
}  // namespace kiln::bench
