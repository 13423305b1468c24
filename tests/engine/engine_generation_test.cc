// Generation through the engine with a fake model: tokens, text, stop rules, logprobs, choices.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "tokenizer/detokenizer.h"
#include "engine/engine.h"
#include "engine/engine_test_util.h"
#include "util/error.h"

namespace kiln::testing {
namespace {

using T = FakeTokenizer;

GenerationRequest Request(std::vector<int32_t> prompt, int32_t max_new) {
  GenerationRequest r;
  r.prompt = std::move(prompt);
  r.stop.max_new_tokens = max_new;
  return r;
}

// One request on a fresh engine, with `peak` as the model's script.
std::vector<ChoiceOutput> Generate(const GenerationRequest& r, const Tokenizer* tok,
                                   PeakFn peak = {}) {
  return RunAlone(r, tok, std::move(peak));
}

TEST(EngineGeneration, GreedyFollowsTheModelsArgmax) {
  T tok;
  for (int32_t first : {30, 40, 50, 60}) {
    GenerationRequest r = Request({first, first - 1, first - 2}, 40);
    const auto out = Generate(r, &tok);
    ASSERT_EQ(out.size(), 1u);
    const auto ref = GreedyReference(r.prompt, 40, tok.StopIds());
    EXPECT_EQ(out[0].tokens, ref);
    const bool eos = ref.back() == T::kEos || ref.back() == T::kEnd;
    EXPECT_EQ(out[0].finish, eos ? FinishReason::kEosToken : FinishReason::kLength);
    EXPECT_EQ(out[0].text, tok.Decode(out[0].tokens, true));
    EXPECT_EQ(out[0].generated, static_cast<int32_t>(ref.size()));
  }
}

TEST(EngineGeneration, StopSequenceAcrossTokensIsNotEmitted) {
  T tok;
  GenerationRequest r = Request({T::kA}, 20);
  r.stop.stop_sequences = {"STOP"};
  const auto out = Generate(r, &tok, Script({T::kHel, T::kLo, T::kST, T::kOP, T::kBang}, 1));
  EXPECT_EQ(out[0].text, "Hello");
  EXPECT_EQ(out[0].finish, FinishReason::kStopSequence);
  EXPECT_EQ(out[0].tokens.size(), 4u);
}

TEST(EngineGeneration, MultibyteCharactersAreNeverSplit) {
  T tok;
  const std::vector<int32_t> script = {T::kEAcute1, T::kEAcute2, T::kEuro12,  T::kEuro3,
                                       T::kSmile12, T::kSmile34, T::kBadByte, T::kA};
  GenerationRequest r = Request({T::kB}, 8);
  const auto out = Generate(r, &tok, Script(script, 1));  // the collector checks each event
  EXPECT_EQ(out[0].text,
            "é€😀\xEF\xBF\xBD"
            "a");
  EXPECT_EQ(out[0].finish, FinishReason::kLength);

  r.stop.stop_sequences = {"é€"};  // bytes of both characters arrive in separate tokens
  const auto stopped = Generate(r, &tok, Script(script, 1));
  EXPECT_EQ(stopped[0].text, "");
  EXPECT_EQ(stopped[0].finish, FinishReason::kStopSequence);
  EXPECT_EQ(stopped[0].tokens.size(), 4u);
}

TEST(EngineGeneration, TextHeldForAStopPrefixIsReleasedAtTheEnd) {
  T tok;
  GenerationRequest r = Request({T::kA}, 3);
  r.stop.stop_sequences = {"STOP"};
  const auto out = Generate(r, &tok, Script({T::kHel, T::kLo, T::kST}, 1));
  EXPECT_EQ(out[0].text, "HelloST");
  EXPECT_EQ(out[0].finish, FinishReason::kLength);
}

TEST(EngineGeneration, SpecialTokensSkippedOrShown) {
  T tok;
  GenerationRequest r = Request({T::kC}, 4);
  const auto script = Script({T::kA, T::kUnk, T::kBos, T::kB}, 1);
  EXPECT_EQ(Generate(r, &tok, script)[0].text, "ab");
  r.skip_special_tokens = false;
  EXPECT_EQ(Generate(r, &tok, script)[0].text, "a<unk><s>b");
}

TEST(EngineGeneration, EosAndStopTokenIdsEndWithoutText) {
  T tok;
  GenerationRequest r = Request({T::kC}, 10);
  auto out = Generate(r, &tok, Script({T::kA, T::kEnd, T::kB}, 1));
  EXPECT_EQ(out[0].tokens, (std::vector<int32_t>{T::kA, T::kEnd}));
  EXPECT_EQ(out[0].text, "a");
  EXPECT_EQ(out[0].finish, FinishReason::kEosToken);

  r.stop.ignore_eos = true;
  out = Generate(r, &tok, Script({T::kA, T::kEnd, T::kB}, 1));
  EXPECT_EQ(out[0].tokens.size(), 10u);
  EXPECT_EQ(out[0].finish, FinishReason::kLength);

  r.stop.stop_token_ids = {T::kB};
  out = Generate(r, &tok, Script({T::kA, T::kEnd, T::kB}, 1));
  EXPECT_EQ(out[0].tokens, (std::vector<int32_t>{T::kA, T::kEnd, T::kB}));
  EXPECT_EQ(out[0].finish, FinishReason::kEosToken);
}

TEST(EngineGeneration, MinTokensMasksStopTokens) {
  T tok;
  GenerationRequest r = Request({T::kC}, 10);
  r.stop.min_tokens = 3;
  const auto out = Generate(r, &tok, Script({T::kEos}, 1));  // the model always wants to stop
  ASSERT_EQ(out[0].tokens.size(), 4u);
  for (int i = 0; i < 3; ++i) EXPECT_NE(out[0].tokens[i], T::kEos);
  EXPECT_EQ(out[0].tokens[3], T::kEos);
  EXPECT_EQ(out[0].finish, FinishReason::kEosToken);
}

TEST(EngineGeneration, LogprobsAreTheModelsRawLogSoftmax) {
  T tok;
  GenerationRequest r = Request({20, 21, 22}, 12);
  r.logprobs = true;
  r.top_n_tokens = 3;
  r.sampling.do_sample = true;
  r.sampling.temperature = 0.7f;
  r.sampling.top_k = 5;
  r.sampling.seed = 99;
  const auto out = Generate(r, &tok);
  EXPECT_EQ(out[0].seed, 99u);
  std::vector<int32_t> history = r.prompt;
  std::vector<float> logits(64);
  for (size_t i = 0; i < out[0].tokens.size(); ++i) {
    FakeLogits(history, 64, {}, logits.data());
    double z = 0;
    for (float x : logits) z += std::exp(x);
    const int32_t t = out[0].tokens[i];
    EXPECT_NEAR(out[0].logprobs[i], logits[t] - std::log(z), 1e-4);
    ASSERT_EQ(out[0].top[i].size(), 3u);
    const int32_t best =
        static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
    EXPECT_EQ(out[0].top[i][0].id, best);
    EXPECT_GE(out[0].top[i][0].logprob, out[0].top[i][1].logprob);
    EXPECT_EQ(out[0].top[i][0].text, Detokenizer::StandaloneText(tok, best));
    history.push_back(t);
  }
}

TEST(EngineGeneration, ChoicesShareThePromptAndSampleIndependently) {
  T tok;
  GenerationRequest r = Request(std::vector<int32_t>(21, 33), 16);
  for (int i = 0; i < 21; ++i) r.prompt[i] = 25 + i;
  r.n = 4;
  r.stop.ignore_eos = true;
  r.sampling.do_sample = true;
  r.sampling.seed = 11;

  FakeRunnerOptions o;
  EngineConfig c;
  TestEngine t(o, c, &tok);
  Collector col;
  t.engine->Submit(r, col.Sink(0, 4));
  ASSERT_TRUE(col.Wait(4));
  const auto out = col.Get(0);
  for (int a = 0; a < 4; ++a) {
    EXPECT_EQ(out[a].tokens.size(), 16u);
    for (int b = a + 1; b < 4; ++b) EXPECT_NE(out[a].tokens, out[b].tokens) << a << " " << b;
  }
  // Choices 1..3 took choice 0's 5 full prompt blocks from the prefix cache.
  EXPECT_EQ(WaitIdle(*t.engine).prefix_cache_hits, 15);
  // Choice 0 is what n = 1 gives with the same seed.
  r.n = 1;
  EXPECT_EQ(Generate(r, &tok)[0], out[0]);
}

TEST(EngineGeneration, UnseededRequestsReportTheirSeed) {
  T tok;
  GenerationRequest r = Request({30}, 4);
  r.sampling.do_sample = true;
  const auto a = Generate(r, &tok);
  r.sampling.seed = a[0].seed;
  EXPECT_EQ(Generate(r, &tok)[0], a[0]);
}

TEST(EngineGeneration, WithoutATokenizerEventsCarryNoText) {
  GenerationRequest r = Request({30, 31}, 5);
  const auto out = Generate(r, nullptr);
  EXPECT_EQ(out[0].tokens.size(), 5u);  // no eos ids without a tokenizer
  EXPECT_EQ(out[0].text, "");
}

}  // namespace
}  // namespace kiln::testing
