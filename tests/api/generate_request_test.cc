// TGI /generate validation: every limit at the limit (accepted) and one past it (422 with
// TGI's exact message, error_type "validation").
#include "api/generate_request.h"

#include <gtest/gtest.h>

#include <string>

#include "api/api_error.h"
#include "api/token_budget.h"
#include "api_test_util.h"

namespace kiln::api {
namespace {

ValidationLimits Limits() {
  ValidationLimits l;
  l.max_best_of = 2;
  l.max_stop_sequences = 4;
  l.max_top_n_tokens = 5;
  l.max_input_tokens = 100;
  l.max_total_tokens = 150;
  return l;
}

GenerateRequest Parse(const std::string& params, bool streaming = false) {
  return ParseGenerateRequest(
      J(("{\"inputs\": \"Hello\", \"parameters\": " + params + "}").c_str()), Limits(), streaming);
}

// The failure of a parse: 422, type validation, and its message.
std::string Fails(const std::string& params, bool streaming = false) {
  ApiError e = ExpectApiError([&] { Parse(params, streaming); });
  EXPECT_EQ(e.status(), 422) << params;
  EXPECT_EQ(e.type(), "validation") << params;
  EXPECT_EQ(TgiErrorJson(e),
            nlohmann::json({{"error", e.message()}, {"error_type", "validation"}}).dump());
  return e.message();
}

TEST(GenerateRequest, TextGenerationClientBodyWithNulls) {
  // What the text_generation Python client sends: every parameter, most of them null.
  GenerateRequest r = ParseGenerateRequest(J(R"({"inputs": "Hi", "parameters": {
      "best_of": null, "details": true, "decoder_input_details": false, "do_sample": false,
      "max_new_tokens": 20, "repetition_penalty": null, "frequency_penalty": null,
      "return_full_text": false, "seed": null, "stop": [], "temperature": null, "top_k": null,
      "top_n_tokens": null, "top_p": null, "truncate": null, "typical_p": null,
      "watermark": false, "grammar": null, "adapter_id": null}, "stream": false})"),
                                           Limits(), false);
  EXPECT_EQ(r.inputs, "Hi");
  EXPECT_TRUE(r.details);
  EXPECT_FALSE(r.options.do_sample);
  EXPECT_EQ(r.options.max_new_tokens, 20);
  EXPECT_EQ(r.best_of, 1);
  EXPECT_TRUE(r.options.stop.empty());
}

TEST(GenerateRequest, MissingParametersSampleAsTgiDoes) {
  GenerateRequest r = ParseGenerateRequest(J(R"({"inputs": "Hi"})"), Limits(), false);
  EXPECT_TRUE(r.options.do_sample);
  EXPECT_FALSE(Parse("{}").options.do_sample);
}

TEST(GenerateRequest, WarpersImplySampling) {
  EXPECT_TRUE(Parse(R"({"temperature": 0.5})").options.do_sample);
  EXPECT_TRUE(Parse(R"({"top_k": 5})").options.do_sample);
  EXPECT_TRUE(Parse(R"({"top_p": 0.9})").options.do_sample);
  EXPECT_FALSE(Parse(R"({"temperature": 1.0})").options.do_sample);
}

TEST(GenerateRequest, Inputs) {
  EXPECT_EQ(ExpectApiError([] {
              ParseGenerateRequest(J(R"({"inputs": ""})"), Limits(), false);
            }).message(),
            "Input validation error: `inputs` cannot be empty");
  ApiError missing =
      ExpectApiError([] { ParseGenerateRequest(J(R"({"input": "x"})"), Limits(), false); });
  EXPECT_EQ(missing.status(), 422);
  EXPECT_NE(missing.message().find("missing field `inputs`"), std::string::npos);
  EXPECT_EQ(
      ExpectApiError([] { ParseGenerateRequest(J(R"({"inputs": 5})"), Limits(), false); }).status(),
      422);
}

TEST(GenerateRequest, BestOf) {
  EXPECT_EQ(Parse(R"({"best_of": 2, "do_sample": true})").best_of, 2);
  EXPECT_EQ(Parse(R"({"best_of": 2, "do_sample": true})").options.n, 2);
  EXPECT_EQ(Fails(R"({"best_of": 3, "do_sample": true})"),
            "Input validation error: `best_of` must be > 0 and <= 2. Given: 3");
  EXPECT_EQ(Fails(R"({"best_of": 0})"),
            "Input validation error: `best_of` must be > 0 and <= 2. Given: 0");
  EXPECT_EQ(Fails(R"({"best_of": 2})"),
            "Input validation error: you must use sampling when `best_of` is > 1");
  EXPECT_EQ(Fails(R"({"best_of": 2, "do_sample": true, "seed": 1})"),
            "Input validation error: `seed` must not be set when `best_of` > 1");
  EXPECT_EQ(Fails(R"({"best_of": 2, "do_sample": true})", true),
            "Input validation error: `best_of` != 1 is not supported when streaming tokens");
  ValidationLimits one = Limits();
  one.max_best_of = 1;
  ApiError e = ExpectApiError([&] {
    ParseGenerateRequest(J(R"({"inputs": "x", "parameters": {"best_of": 2, "do_sample": true}})"),
                         one, false);
  });
  EXPECT_EQ(e.message(), "Input validation error: `best_of` != 1 is not allowed for this endpoint");
}

TEST(GenerateRequest, StopSequences) {
  EXPECT_EQ(Parse(R"({"stop": ["a", "b", "c", "d"]})").options.stop.size(), 4u);
  EXPECT_EQ(Fails(R"({"stop": ["a", "b", "c", "d", "e"]})"),
            "Input validation error: `stop` supports up to 4 stop sequences. Given: 5");
  EXPECT_NE(Fails(R"({"stop": "a"})").find("expected a sequence of strings"), std::string::npos);
}

TEST(GenerateRequest, TopNTokens) {
  EXPECT_EQ(Parse(R"({"top_n_tokens": 5})").options.top_n_tokens, 5);
  EXPECT_EQ(Parse(R"({"top_n_tokens": 0})").options.top_n_tokens, 0);
  EXPECT_EQ(Fails(R"({"top_n_tokens": 6})"),
            "Input validation error: `top_n_tokens` must be >= 0 and <= 5. Given: 6");
  EXPECT_NE(Fails(R"({"top_n_tokens": -1})").find("expected u32"), std::string::npos);
}

TEST(GenerateRequest, Truncate) {
  EXPECT_EQ(Parse(R"({"truncate": 100})").options.truncate, 100);
  EXPECT_EQ(Fails(R"({"truncate": 101})"),
            "Input validation error: `truncate` must be strictly positive and less than 100. "
            "Given: 101");
  EXPECT_EQ(Fails(R"({"truncate": 0})"),
            "Input validation error: `truncate` must be strictly positive and less than 100. "
            "Given: 0");
}

TEST(GenerateRequest, SamplingRanges) {
  EXPECT_EQ(Fails(R"({"temperature": 0})"),
            "Input validation error: `temperature` must be strictly positive");
  EXPECT_EQ(Fails(R"({"temperature": -1})"),
            "Input validation error: `temperature` must be strictly positive");
  EXPECT_EQ(Fails(R"({"repetition_penalty": 0})"),
            "Input validation error: `repetition_penalty` must be strictly positive");
  EXPECT_NO_THROW(Parse(R"({"frequency_penalty": 2.0})"));
  EXPECT_NO_THROW(Parse(R"({"frequency_penalty": -2.0})"));
  EXPECT_EQ(Fails(R"({"frequency_penalty": 2.1})"),
            "Input validation error: `frequency_penalty` must be >= -2.0 and <= 2.0");
  EXPECT_NO_THROW(Parse(R"({"top_p": 0.99})"));
  EXPECT_EQ(Fails(R"({"top_p": 1.0})"), "Input validation error: `top_p` must be > 0.0 and < 1.0");
  EXPECT_EQ(Fails(R"({"top_p": 0})"), "Input validation error: `top_p` must be > 0.0 and < 1.0");
  EXPECT_EQ(Fails(R"({"typical_p": 1.0})"),
            "Input validation error: `typical_p` must be > 0.0 and < 1.0");
  EXPECT_EQ(Parse(R"({"top_k": 1})").options.top_k, 1);
  EXPECT_EQ(Fails(R"({"top_k": 0})"), "Input validation error: `top_k` must be strictly positive");
  EXPECT_EQ(Fails(R"({"top_k": -5})"), "Input validation error: `top_k` must be strictly positive");
  EXPECT_NE(Fails(R"({"temperature": "hot"})").find("parameters.temperature"), std::string::npos);
  EXPECT_NE(Fails(R"({"temperature": 1e300})").find("expected f32"), std::string::npos);
}

TEST(GenerateRequest, MaxNewTokens) {
  EXPECT_EQ(Parse(R"({"max_new_tokens": 1})").options.max_new_tokens, 1);
  EXPECT_EQ(Fails(R"({"max_new_tokens": 0})"),
            "Input validation error: `max_new_tokens` must be strictly positive");
  EXPECT_NE(Fails(R"({"max_new_tokens": -1})").find("invalid value: integer `-1`, expected u32"),
            std::string::npos);
  EXPECT_NE(Fails(R"({"max_new_tokens": 99999999999999999999})").find("expected u32"),
            std::string::npos);
}

TEST(GenerateRequest, SeedAndFlags) {
  GenerateRequest r = Parse(R"({"seed": 18446744073709551615, "details": true,
                                "return_full_text": true, "decoder_input_details": true})");
  EXPECT_EQ(r.options.seed, 18446744073709551615ull);
  EXPECT_TRUE(r.details && r.return_full_text && r.decoder_input_details);
  EXPECT_EQ(Fails(R"({"decoder_input_details": true})", true),
            "Input validation error: `decoder_input_details` == true is not supported when "
            "streaming tokens");
  EXPECT_NE(Fails(R"({"seed": -1})").find("expected u64"), std::string::npos);
}

TEST(GenerateRequest, UnsupportedFeaturesAreRefusedByName) {
  EXPECT_NO_THROW(Parse(R"({"watermark": false})"));
  EXPECT_EQ(Fails(R"({"watermark": true})"),
            "Input validation error: `watermark` is not supported by this server");
  EXPECT_EQ(Fails(R"({"grammar": {"type": "json", "value": {}}})"),
            "Input validation error: grammar is not supported");
  EXPECT_NE(Fails(R"({"adapter_id": "my/lora"})").find("adapter_id"), std::string::npos);
}

TEST(GenerateRequest, UnknownFieldsAreIgnored) {
  EXPECT_NO_THROW(Parse(R"({"whatever": [1, 2, {"x": null}]})"));
}

TEST(GenerateRequest, StreamFlag) {
  EXPECT_TRUE(ReadStreamFlag(J(R"({"inputs": "x", "stream": true})")));
  EXPECT_FALSE(ReadStreamFlag(J(R"({"inputs": "x"})")));
  EXPECT_EQ(ExpectApiError([] { ReadStreamFlag(J(R"({"stream": "yes"})")); }).status(), 422);
}

TEST(TokenBudget, TotalTokensAtLimitAndOver) {
  ValidationLimits l = Limits();  // input 100, total 150
  EXPECT_EQ(ResolveMaxNewTokens(50, 100, l), 100);
  ApiError e = ExpectApiError([&] { ResolveMaxNewTokens(50, 101, l); });
  EXPECT_EQ(e.status(), 422);
  EXPECT_EQ(e.message(),
            "Input validation error: `inputs` tokens + `max_new_tokens` must be <= 150. Given: 50 "
            "`inputs` tokens and 101 `max_new_tokens`");
}

TEST(TokenBudget, InputTokensAtLimitAndOver) {
  ValidationLimits l = Limits();
  EXPECT_EQ(ResolveMaxNewTokens(100, 1, l), 1);
  EXPECT_EQ(ExpectApiError([&] { ResolveMaxNewTokens(101, 1, l); }).message(),
            "Input validation error: `inputs` must have less than 100 tokens. Given: 101");
}

TEST(TokenBudget, UnsetMaxNewTokensTakesTheRest) {
  ValidationLimits l = Limits();
  EXPECT_EQ(ResolveMaxNewTokens(40, std::nullopt, l), 110);
  // Past the total budget the total check fires first, as in TGI.
  EXPECT_NE(ExpectApiError([&] { ResolveMaxNewTokens(151, std::nullopt, l); })
                .message()
                .find("must be <= 150"),
            std::string::npos);
}

}  // namespace
}  // namespace kiln::api
