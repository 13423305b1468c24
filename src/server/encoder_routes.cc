// Encoder routes: OpenAI's /v1/embeddings; text-embeddings-inference's /embed, /rerank and
// /predict; /qa (question_answering.h). Each tokenizes its inputs at the edge, submits them
// to the EncoderEngine as one call (encoder_call.h) and shapes the results as its peer does.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "api/api_error.h"
#include "api/encoder_request.h"
#include "api/json_input.h"
#include "api/json_output.h"
#include "server/encoder_call.h"
#include "server/encoder_inputs.h"
#include "server/routes.h"
#include "util/error.h"

namespace kiln {
namespace {

EncoderEngine& RequireEncoder(const ServerState& state, const char* what) {
  if (state.encoder == nullptr) {
    throw api::ApiError(
        400, "validation",
        StrCat("model '", state.config.model_id, "' is a text-generation model: ", what,
               " needs an encoder model (kiln serve --model-id DIR of a "
               "BERT-style model)"));
  }
  return *state.encoder;
}

EncoderInputLimits Limits(const EncoderEngine& e) {
  return EncoderInputLimits{e.model_config().max_input_tokens};
}

// Keeps the first `dims` values (Matryoshka truncation) and L2-normalizes when asked.
void Shape(std::vector<float>& v, std::optional<int32_t> dims, bool normalize) {
  if (dims) v.resize(static_cast<size_t>(*dims));
  if (!normalize) return;
  double sq = 0;
  for (float x : v) sq += static_cast<double>(x) * x;
  // sentence-transformers' Normalize: x / max(||x||, 1e-12).
  const double norm = std::max(std::sqrt(sq), 1e-12);
  for (float& x : v) x = static_cast<float>(x / norm);
}

void CheckDimensions(std::optional<int32_t> dims, const EncoderEngine& e) {
  if (dims && *dims > e.model_config().hidden_size) {
    throw api::ValidationError(
        StrCat("`dimensions` is ", *dims, ", but the model's embeddings have ",
               e.model_config().hidden_size),
        "dimensions");
  }
}

void RequireClassifier(const EncoderEngine& e, const char* route) {
  if (e.model_config().head != EncoderHead::kSequenceClassification) {
    throw api::ApiError(400, "validation",
                        StrCat(route, " needs a sequence-classification model; ",
                               e.model_config().arch_name, " has no classifier"));
  }
}

float Sigmoid(float x) { return 1.0f / (1.0f + std::exp(-x)); }

std::vector<float> Softmax(const std::vector<float>& logits) {
  const float max = *std::max_element(logits.begin(), logits.end());
  std::vector<float> p(logits.size());
  double sum = 0;
  for (size_t i = 0; i < p.size(); ++i) sum += p[i] = std::exp(logits[i] - max);
  for (float& x : p) x = static_cast<float>(x / sum);
  return p;
}

}  // namespace

void HandleEmbeddings(RouteContext& ctx) {
  EncoderEngine& enc = RequireEncoder(ctx.state, "/v1/embeddings");
  const nlohmann::json body = api::ParseJsonObject(ctx.request.body);
  api::EmbeddingsRequest req = api::ParseEmbeddingsRequest(
      body, ctx.state.config.limits.max_client_batch_size, enc.model_config().vocab_size);
  // `model` is not checked, as on the chat routes (TGI's behaviour: one model per server).
  CheckDimensions(req.dimensions, enc);
  const Tokenizer& tokenizer = RequireTokenizer(ctx.state);
  std::vector<EncoderRequest> inputs;
  int64_t prompt_tokens = 0;
  for (api::EncoderInput& in : req.inputs) {
    EncoderRequest r = in.ids ? IdsInput(std::move(*in.ids), Limits(enc), "input")
                              : EncodeTextInput(tokenizer, in.text, {}, Limits(enc), "input");
    r.task = EncoderTask::kEmbed;
    r.pooling = enc.model_config().pooling;
    prompt_tokens += static_cast<int64_t>(r.tokens.size());
    inputs.push_back(std::move(r));
  }
  const bool normalize = enc.model_config().normalize;
  RunEncoderCall(
      ctx.state, ctx.reply, Admit(ctx.state), std::move(inputs),
      [req = std::move(req), prompt_tokens, normalize,
       model = ctx.state.config.model_id](std::vector<EncoderResult>& results) {
        nlohmann::json data = nlohmann::json::array();
        for (size_t i = 0; i < results.size(); ++i) {
          std::vector<float>& v = results[i].values;
          Shape(v, req.dimensions, normalize);
          nlohmann::json item = {{"object", "embedding"}, {"index", i}};
          if (req.base64) {
            item["embedding"] = api::Float32Base64(v);
          } else {
            item["embedding"] = v;
          }
          data.push_back(std::move(item));
        }
        return api::DumpJson(
            {{"object", "list"},
             {"data", std::move(data)},
             {"model", model},
             {"usage", {{"prompt_tokens", prompt_tokens}, {"total_tokens", prompt_tokens}}}});
      });
}

void HandleEmbed(RouteContext& ctx) {
  EncoderEngine& enc = RequireEncoder(ctx.state, "/embed");
  const nlohmann::json body = api::ParseJsonObject(ctx.request.body);
  api::EmbedRequest req =
      api::ParseEmbedRequest(body, ctx.state.config.limits.max_client_batch_size);
  CheckDimensions(req.dimensions, enc);
  const Tokenizer& tokenizer = RequireTokenizer(ctx.state);
  std::vector<EncoderRequest> inputs;
  for (const std::string& text : req.inputs) {
    EncoderRequest r = EncodeTextInput(tokenizer, text, req.truncate, Limits(enc), "inputs");
    r.task = EncoderTask::kEmbed;
    r.pooling = enc.model_config().pooling;
    inputs.push_back(std::move(r));
  }
  RunEncoderCall(ctx.state, ctx.reply, Admit(ctx.state), std::move(inputs),
                 [req = std::move(req)](std::vector<EncoderResult>& results) {
                   nlohmann::json out = nlohmann::json::array();
                   for (EncoderResult& r : results) {
                     Shape(r.values, req.dimensions, req.normalize);
                     out.push_back(r.values);
                   }
                   return api::DumpJson(out);
                 });
}

void HandleRerank(RouteContext& ctx) {
  EncoderEngine& enc = RequireEncoder(ctx.state, "/rerank");
  RequireClassifier(enc, "/rerank");
  if (enc.model_config().labels.size() != 1) {
    throw api::ApiError(400, "validation",
                        StrCat("/rerank needs a re-ranker (a classifier with one label); this "
                               "model has ",
                               enc.model_config().labels.size(), " labels: use /predict"));
  }
  const nlohmann::json body = api::ParseJsonObject(ctx.request.body);
  api::RerankRequest req =
      api::ParseRerankRequest(body, ctx.state.config.limits.max_client_batch_size);
  const Tokenizer& tokenizer = RequireTokenizer(ctx.state);
  std::vector<EncoderRequest> inputs;
  for (const std::string& text : req.texts) {
    EncoderRequest r =
        EncodePairInput(tokenizer, req.query, text, req.truncate, Limits(enc), "texts");
    r.task = EncoderTask::kClassify;
    inputs.push_back(std::move(r));
  }
  RunEncoderCall(ctx.state, ctx.reply, Admit(ctx.state), std::move(inputs),
                 [req = std::move(req)](std::vector<EncoderResult>& results) {
                   std::vector<size_t> order(results.size());
                   std::iota(order.begin(), order.end(), 0);
                   auto score = [&](size_t i) {
                     const float logit = results[i].values.at(0);
                     return req.raw_scores ? logit : Sigmoid(logit);
                   };
                   std::stable_sort(order.begin(), order.end(),
                                    [&](size_t a, size_t b) { return score(a) > score(b); });
                   nlohmann::json out = nlohmann::json::array();
                   for (size_t i : order) {
                     nlohmann::json item = {{"index", i}, {"score", score(i)}};
                     if (req.return_text) item["text"] = req.texts[i];
                     out.push_back(std::move(item));
                   }
                   return api::DumpJson(out);
                 });
}

void HandlePredict(RouteContext& ctx) {
  EncoderEngine& enc = RequireEncoder(ctx.state, "/predict");
  RequireClassifier(enc, "/predict");
  const nlohmann::json body = api::ParseJsonObject(ctx.request.body);
  api::PredictRequest req =
      api::ParsePredictRequest(body, ctx.state.config.limits.max_client_batch_size);
  const Tokenizer& tokenizer = RequireTokenizer(ctx.state);
  std::vector<EncoderRequest> inputs;
  for (const std::vector<std::string>& texts : req.inputs) {
    EncoderRequest r =
        texts.size() == 1
            ? EncodeTextInput(tokenizer, texts[0], req.truncate, Limits(enc), "inputs")
            : EncodePairInput(tokenizer, texts[0], texts[1], req.truncate, Limits(enc), "inputs");
    r.task = EncoderTask::kClassify;
    inputs.push_back(std::move(r));
  }
  RunEncoderCall(ctx.state, ctx.reply, Admit(ctx.state), std::move(inputs),
                 [raw = req.raw_scores, batched = req.batched,
                  labels = enc.model_config().labels](std::vector<EncoderResult>& results) {
                   nlohmann::json all = nlohmann::json::array();
                   for (EncoderResult& r : results) {
                     std::vector<float> scores = r.values;
                     if (!raw) {
                       if (scores.size() == 1) {
                         scores[0] = Sigmoid(scores[0]);
                       } else {
                         scores = Softmax(scores);
                       }
                     }
                     std::vector<size_t> order(scores.size());
                     std::iota(order.begin(), order.end(), 0);
                     std::stable_sort(order.begin(), order.end(),
                                      [&](size_t a, size_t b) { return scores[a] > scores[b]; });
                     nlohmann::json one = nlohmann::json::array();
                     for (size_t i : order)
                       one.push_back({{"score", scores[i]}, {"label", labels.at(i)}});
                     all.push_back(std::move(one));
                   }
                   return api::DumpJson(batched ? all : all.at(0));
                 });
}

}  // namespace kiln
