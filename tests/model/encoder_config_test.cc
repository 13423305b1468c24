// EncoderConfig from config.json: BERT and RoBERTa families and heads recognised, decoders not
// taken for encoders, and bad dimensions refused with the field named.
#include "model/encoder_config.h"

#include <gtest/gtest.h>

#include "formats/hf_config.h"
#include "util/error.h"

namespace kiln {
namespace {

HfConfig Config(const std::string& json) {
  return ParseHfConfig(json, "", ::testing::TempDir() + "/no_such_model_dir");
}

constexpr const char* kDims =
    R"("vocab_size": 100, "hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 2,
       "num_attention_heads": 4, "max_position_embeddings": 64)";

TEST(EncoderConfig, FamiliesAndHeads) {
  EncoderConfig bert = EncoderConfigFromHf(Config(
      std::string(R"({"architectures": ["BertModel"], "model_type": "bert", )") + kDims + "}"));
  EXPECT_EQ(bert.arch, EncoderArch::kBert);
  EXPECT_EQ(bert.head, EncoderHead::kNone);
  EXPECT_EQ(bert.pooling, Pooling::kCls);  // no sentence-transformers files: BERT's [CLS]
  EXPECT_EQ(bert.max_input_tokens, 64);

  EncoderConfig roberta = EncoderConfigFromHf(
      Config(std::string(R"({"architectures": ["XLMRobertaForSequenceClassification"],
                      "model_type": "xlm-roberta", "pad_token_id": 1,
                      "id2label": {"0": "no", "1": "yes"}, )") +
             kDims + "}"));
  EXPECT_EQ(roberta.arch, EncoderArch::kRoberta);
  EXPECT_EQ(roberta.head, EncoderHead::kSequenceClassification);
  EXPECT_EQ(roberta.position_offset, 2);
  EXPECT_EQ(roberta.max_input_tokens, 62);
  EXPECT_EQ(roberta.labels, (std::vector<std::string>{"no", "yes"}));

  EncoderConfig qa = EncoderConfigFromHf(Config(
      std::string(R"({"architectures": ["BertForQuestionAnswering"], "hidden_act": "gelu_new", )") +
      kDims + "}"));
  EXPECT_EQ(qa.head, EncoderHead::kQuestionAnswering);
  EXPECT_EQ(qa.activation, kernels::GeluStyle::kTanh);
}

TEST(EncoderConfig, DecodersAreNotEncoders) {
  EXPECT_FALSE(IsEncoderConfig(Config(R"({"architectures": ["LlamaForCausalLM"]})")));
  EXPECT_FALSE(IsEncoderConfig(Config(R"({"model_type": "qwen2"})")));
  EXPECT_TRUE(IsEncoderConfig(Config(R"({"model_type": "bert"})")));
}

TEST(EncoderConfig, BadValuesAreRefused) {
  const std::string bert = R"({"architectures": ["BertModel"], )";
  auto refused = [&](const std::string& json, const std::string& words) {
    try {
      EncoderConfigFromHf(Config(json));
      ADD_FAILURE() << "accepted: " << json;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what();
    }
  };
  refused(bert + R"("vocab_size": 100, "hidden_size": 30, "intermediate_size": 64,
                   "num_hidden_layers": 2, "num_attention_heads": 4})",
          "not a multiple of num_attention_heads");
  refused(bert + R"("hidden_size": 32})", "missing 'vocab_size'");
  refused(bert + kDims + R"(, "hidden_act": "swish"})", "unsupported hidden_act 'swish'");
  refused(bert + kDims + R"(, "position_embedding_type": "relative_key"})",
          "position_embedding_type");
  refused(bert + kDims + R"(, "num_hidden_layers": 0})", "num_hidden_layers");
  refused(R"({"architectures": ["BertForTokenClassification"], )" + std::string(kDims) + "}",
          "unsupported encoder architecture");
  refused(std::string(R"({"architectures": ["BertForSequenceClassification"],
                         "id2label": {"x": "a"}, )") +
              kDims + "}",
          "id2label entry 'x'");
  refused(std::string(R"({"architectures": ["RobertaModel"], "pad_token_id": 70, )") + kDims + "}",
          "no position is left");
}

}  // namespace
}  // namespace kiln
