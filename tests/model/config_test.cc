#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "formats/hf_config.h"
#include "model/config.h"
#include "model/rope_freqs.h"
#include "util/error.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;

// Writes config.json into a fresh temp dir and returns the dir.
std::string WriteConfig(const std::string& name, const std::string& json) {
  fs::path dir = fs::temp_directory_path() / ("kiln_config_test_" + name);
  fs::create_directories(dir);
  std::ofstream(dir / "config.json") << json;
  return dir.string();
}

// The published config of meta-llama/Llama-3.2-1B (abridged to the fields Kiln reads).
constexpr char kLlama32[] = R"({
  "architectures": ["LlamaForCausalLM"], "hidden_size": 2048, "intermediate_size": 8192,
  "num_hidden_layers": 16, "num_attention_heads": 32, "num_key_value_heads": 8,
  "head_dim": 64, "max_position_embeddings": 131072, "rms_norm_eps": 1e-05,
  "rope_theta": 500000.0, "tie_word_embeddings": true, "vocab_size": 128256,
  "bos_token_id": 128000, "eos_token_id": 128001,
  "rope_scaling": {"factor": 32.0, "high_freq_factor": 4.0, "low_freq_factor": 1.0,
                   "original_max_position_embeddings": 8192, "rope_type": "llama3"}})";

TEST(ModelConfig, ReadsLlama32) {
  ModelConfig c = ModelConfigFromHf(LoadHfConfig(WriteConfig("llama32", kLlama32)));
  EXPECT_EQ(c.arch, Architecture::kLlama);
  EXPECT_EQ(c.hidden_size, 2048);
  EXPECT_EQ(c.num_kv_heads, 8);
  EXPECT_EQ(c.head_dim, 64);
  EXPECT_TRUE(c.tie_word_embeddings);
  EXPECT_EQ(c.rope_scaling.type, RopeScaling::Type::kLlama3);
  EXPECT_EQ(c.eos_token_ids, std::vector<int64_t>{128001});
  EXPECT_EQ(c.rope_style, kernels::RopeStyle::kHalf);
}

TEST(ModelConfig, ReadsTransformers5RopeParameters) {
  ModelConfig c = ModelConfigFromHf(LoadHfConfig(WriteConfig("qwen3", R"({
    "architectures": ["Qwen3ForCausalLM"], "hidden_size": 64, "intermediate_size": 128,
    "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 32,
    "vocab_size": 100, "rope_parameters": {"rope_theta": 1000000.0, "rope_type": "default"}})")));
  EXPECT_EQ(c.arch, Architecture::kQwen3);
  EXPECT_TRUE(c.qk_norm);
  EXPECT_EQ(c.head_dim, 32);
  EXPECT_DOUBLE_EQ(c.rope_theta, 1e6);
  EXPECT_EQ(c.rope_scaling.type, RopeScaling::Type::kNone);
}

TEST(ModelConfig, RejectsBadConfigs) {
  const char* bad[] = {
      R"({"architectures": ["GPT2LMHeadModel"]})",
      R"({"architectures": ["LlamaForCausalLM"], "hidden_size": 64})",
      R"({"architectures": ["LlamaForCausalLM"], "hidden_size": 64, "intermediate_size": 128,
          "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 3,
          "vocab_size": 100})",
      R"({"architectures": ["LlamaForCausalLM"], "hidden_size": "64"})",
      R"({"architectures": ["LlamaForCausalLM"], "hidden_size": 64, "intermediate_size": 128,
          "num_hidden_layers": -2, "num_attention_heads": 4, "vocab_size": 100})",
      R"([1, 2])",
      R"({"architectures": )",
  };
  int i = 0;
  for (const char* json : bad) {
    std::string dir = WriteConfig("bad" + std::to_string(i++), json);
    try {
      ModelConfigFromHf(LoadHfConfig(dir));
      ADD_FAILURE() << "accepted: " << json;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(dir), std::string::npos) << e.what();
    }
  }
}

TEST(RopeFreqs, Llama3ScalingKeepsHighAndSlowsLowFrequencies) {
  ModelConfig c = ModelConfigFromHf(LoadHfConfig(WriteConfig("llama32b", kLlama32)));
  std::vector<float> scaled = ComputeRopeInvFreq(c);
  c.rope_scaling.type = RopeScaling::Type::kNone;
  std::vector<float> plain = ComputeRopeInvFreq(c);
  ASSERT_EQ(scaled.size(), 32u);
  EXPECT_FLOAT_EQ(scaled[0], 1.0f);  // wavelength 2*pi < 2048: unchanged
  EXPECT_FLOAT_EQ(scaled[31], plain[31] / 32.0f);  // longest wavelength: divided by factor
}

}  // namespace
}  // namespace kiln
