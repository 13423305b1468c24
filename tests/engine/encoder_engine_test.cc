// The encoder engine over a tiny random BERT written to disk: sequences batched together give
// the same results as each alone (padding-free batching is exact), pooling, the task heads'
// checks, queue bounds and cancellation.
#include "engine/encoder_engine.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <future>
#include <random>

#include "formats/safetensors_writer.h"
#include "util/error.h"

namespace kiln {
namespace {

constexpr int64_t kVocab = 50, kD = 16, kF = 32, kLayers = 2, kPositions = 24, kLabels = 3;

std::vector<float> Random(size_t n, std::mt19937& rng, float scale = 0.3f) {
  std::normal_distribution<float> dist(0.0f, scale);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

// A BertForSequenceClassification with random weights (config.json + model.safetensors).
std::string WriteTinyBert(const std::string& name, const std::string& arch) {
  // One folder per process: ctest runs each test as its own process, several at a time.
  const std::string dir = ::testing::TempDir() + "/" + name + "." + std::to_string(getpid());
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/config.json")
      << R"({"architectures": [")" << arch << R"("], "model_type": "bert", "vocab_size": )"
      << kVocab << R"(, "hidden_size": )" << kD << R"(, "intermediate_size": )" << kF
      << R"(, "num_hidden_layers": )" << kLayers
      << R"(, "num_attention_heads": 4, "max_position_embeddings": )" << kPositions
      << R"(, "type_vocab_size": 2, "hidden_act": "gelu",)"
      << R"( "id2label": {"0": "a", "1": "b", "2": "c"}})";
  std::mt19937 rng(11);
  SafetensorsWriter w;
  const std::string p = "bert.";
  auto matrix = [&](const std::string& n, int64_t rows, int64_t cols) {
    w.AddTensorF32(n, {rows, cols}, Random(rows * cols, rng));
  };
  auto vec = [&](const std::string& n, int64_t len, float base = 0.0f) {
    std::vector<float> v = Random(len, rng, 0.1f);
    for (float& x : v) x += base;
    w.AddTensorF32(n, {len}, v);
  };
  matrix(p + "embeddings.word_embeddings.weight", kVocab, kD);
  matrix(p + "embeddings.position_embeddings.weight", kPositions, kD);
  matrix(p + "embeddings.token_type_embeddings.weight", 2, kD);
  vec(p + "embeddings.LayerNorm.weight", kD, 1.0f);
  vec(p + "embeddings.LayerNorm.bias", kD);
  for (int l = 0; l < kLayers; ++l) {
    const std::string b = p + "encoder.layer." + std::to_string(l) + ".";
    for (const char* m : {"attention.self.query", "attention.self.key", "attention.self.value",
                          "attention.output.dense"}) {
      matrix(b + m + ".weight", kD, kD);
      vec(b + m + ".bias", kD);
    }
    vec(b + "attention.output.LayerNorm.weight", kD, 1.0f);
    vec(b + "attention.output.LayerNorm.bias", kD);
    matrix(b + "intermediate.dense.weight", kF, kD);
    vec(b + "intermediate.dense.bias", kF);
    matrix(b + "output.dense.weight", kD, kF);
    vec(b + "output.dense.bias", kD);
    vec(b + "output.LayerNorm.weight", kD, 1.0f);
    vec(b + "output.LayerNorm.bias", kD);
  }
  matrix(p + "pooler.dense.weight", kD, kD);
  vec(p + "pooler.dense.bias", kD);
  matrix("classifier.weight", kLabels, kD);
  vec("classifier.bias", kLabels);
  const int64_t ids[kPositions] = {};
  w.AddTensor(p + "embeddings.position_ids", "I64", {1, kPositions}, ids, sizeof(ids));
  w.Write(dir + "/model.safetensors");
  return dir;
}

class EncoderEngineTest : public ::testing::Test {
 protected:
  std::unique_ptr<EncoderEngine> Make(EncoderEngineConfig config = {}) {
    static const std::string dir = WriteTinyBert("tiny_bert_cls", "BertForSequenceClassification");
    config.max_batch_tokens = std::max<int64_t>(config.max_batch_tokens, kPositions);
    return std::make_unique<EncoderEngine>(
        EncoderModel::Load(dir), std::make_shared<ThreadPool>(std::vector<int>{}), config);
  }

  static EncoderResult Run(EncoderEngine& e, EncoderRequest r) {
    std::promise<EncoderResult> done;
    auto f = done.get_future();
    e.Submit(std::move(r), [&](EncoderResult&& res) { done.set_value(std::move(res)); });
    return f.get();
  }

  static EncoderRequest Req(std::vector<int32_t> tokens, EncoderTask task,
                            Pooling pooling = Pooling::kMean) {
    EncoderRequest r;
    r.tokens = std::move(tokens);
    r.task = task;
    r.pooling = pooling;
    return r;
  }
};

TEST_F(EncoderEngineTest, BatchedEqualsAlone) {
  auto engine = Make();
  std::mt19937 rng(3);
  std::vector<EncoderRequest> reqs;
  for (int i = 0; i < 12; ++i) {
    std::vector<int32_t> t(1 + rng() % (kPositions - 1));
    for (int32_t& id : t) id = static_cast<int32_t>(rng() % kVocab);
    const EncoderTask task = i % 3 == 0   ? EncoderTask::kClassify
                             : i % 3 == 1 ? EncoderTask::kEmbed
                                          : EncoderTask::kTokens;
    reqs.push_back(Req(t, task, i % 2 ? Pooling::kCls : Pooling::kMean));
    if (i % 4 == 0) reqs.back().type_ids.assign(t.size(), 1);
  }
  std::vector<EncoderResult> alone;
  for (const EncoderRequest& r : reqs) alone.push_back(Run(*engine, r));
  // All at once: the engine packs what is queued into shared forward passes.
  std::vector<std::promise<EncoderResult>> done(reqs.size());
  for (size_t i = 0; i < reqs.size(); ++i) {
    engine->Submit(reqs[i], [&, i](EncoderResult&& r) { done[i].set_value(std::move(r)); });
  }
  int64_t max_batch = 0;
  for (size_t i = 0; i < reqs.size(); ++i) {
    EncoderResult r = done[i].get_future().get();
    ASSERT_TRUE(r.error.empty()) << r.error;
    max_batch = std::max(max_batch, r.batch_size);
    const size_t want = reqs[i].task == EncoderTask::kClassify ? kLabels
                        : reqs[i].task == EncoderTask::kEmbed  ? kD
                                                               : reqs[i].tokens.size() * kD;
    ASSERT_EQ(r.values.size(), want);
    for (size_t j = 0; j < want; ++j) {
      // Batch invariance: every row's math is independent of its neighbours.
      ASSERT_EQ(r.values[j], alone[i].values[j]) << i << " " << j;
    }
  }
  EXPECT_GT(max_batch, 1);
  EncoderEngineStats s = engine->Stats();
  EXPECT_EQ(s.requests, 24);
  EXPECT_LT(s.batches, 24);
}

TEST_F(EncoderEngineTest, MeanPoolingIsTheMeanOfTokenStates) {
  auto engine = Make();
  const std::vector<int32_t> t = {1, 7, 9, 4, 2};
  EncoderResult tokens = Run(*engine, Req(t, EncoderTask::kTokens));
  EncoderResult mean = Run(*engine, Req(t, EncoderTask::kEmbed, Pooling::kMean));
  EncoderResult cls = Run(*engine, Req(t, EncoderTask::kEmbed, Pooling::kCls));
  EncoderResult last = Run(*engine, Req(t, EncoderTask::kEmbed, Pooling::kLastToken));
  for (int64_t d = 0; d < kD; ++d) {
    double sum = 0;
    for (size_t i = 0; i < t.size(); ++i) sum += tokens.values[i * kD + d];
    EXPECT_NEAR(mean.values[d], sum / t.size(), 1e-5);
    EXPECT_EQ(cls.values[d], tokens.values[d]);
    EXPECT_EQ(last.values[d], tokens.values[(t.size() - 1) * kD + d]);
  }
}

TEST_F(EncoderEngineTest, RefusesWhatTheModelCannotRun) {
  auto engine = Make();
  EXPECT_THROW(engine->Submit(Req({}, EncoderTask::kEmbed), [](EncoderResult&&) {}), Error);
  EXPECT_THROW(engine->Submit(Req(std::vector<int32_t>(kPositions + 1, 1), EncoderTask::kEmbed),
                              [](EncoderResult&&) {}),
               Error);
  EXPECT_THROW(
      engine->Submit(Req({1, int32_t{kVocab}}, EncoderTask::kEmbed), [](EncoderResult&&) {}),
      Error);
  EXPECT_THROW(engine->Submit(Req({1, -1}, EncoderTask::kEmbed), [](EncoderResult&&) {}), Error);
  EncoderRequest bad_type = Req({1, 2}, EncoderTask::kEmbed);
  bad_type.type_ids = {0, 2};
  EXPECT_THROW(engine->Submit(bad_type, [](EncoderResult&&) {}), Error);
  // A classifier has no QA head.
  EXPECT_THROW(engine->Submit(Req({1, 2}, EncoderTask::kSpans), [](EncoderResult&&) {}), Error);
}

TEST_F(EncoderEngineTest, CancelledRequestsAreSkippedAndShutdownAnswersTheRest) {
  std::atomic<int> answered{0}, errors{0};
  {
    EncoderEngineConfig config;
    config.max_queue = 2000;
    auto engine = Make(config);
    auto cancelled = std::make_shared<std::atomic<bool>>(true);
    for (int i = 0; i < 500; ++i) {
      EncoderRequest r = Req({1, 2, 3, 4, 5, 6, 7, 8}, EncoderTask::kEmbed);
      if (i % 2) r.cancelled = cancelled;
      engine->Submit(std::move(r), [&](EncoderResult&& res) {
        ++answered;
        if (!res.error.empty()) ++errors;
      });
    }
  }  // destroyed with requests still queued: each gets an error, none is lost
  EXPECT_GE(answered.load(), 250);
  EXPECT_LE(answered.load(), 500);
}

TEST_F(EncoderEngineTest, QueueBound) {
  EncoderEngineConfig config;
  config.max_queue = 4;
  auto engine = Make(config);
  int refused = 0;
  for (int i = 0; i < 200; ++i) {
    try {
      engine->Submit(Req(std::vector<int32_t>(kPositions, 3), EncoderTask::kEmbed),
                     [](EncoderResult&&) {});
    } catch (const Error&) {
      ++refused;
    }
  }
  EXPECT_GT(refused, 0);
}

}  // namespace
}  // namespace kiln
