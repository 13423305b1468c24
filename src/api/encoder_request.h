// Request bodies of the encoder routes, parsed and checked: OpenAI's /v1/embeddings, and
// text-embeddings-inference's /embed, /rerank and /predict, plus /qa (extractive question
// answering, the fields of transformers' question-answering pipeline). Field errors are 422
// ApiErrors naming the field; emptiness and limits are checked here too.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace kiln::api {

// One input: text, or token ids (OpenAI lets a client send ids).
struct EncoderInput {
  std::string text;
  std::optional<std::vector<int32_t>> ids;
};

struct EmbeddingsRequest {  // POST /v1/embeddings
  std::string model;        // empty: the served model
  std::vector<EncoderInput> inputs;
  bool base64 = false;                // encoding_format "base64" (the openai client's default)
  std::optional<int32_t> dimensions;  // keep the first N dimensions (re-normalized)
};

struct TruncateOptions {
  bool truncate = false;  // TEI's default: an input past the model's length is an error
  bool left = false;      // truncation_direction "Left": drop the start instead of the end
};

struct EmbedRequest {  // POST /embed
  std::vector<std::string> inputs;
  bool normalize = true;
  TruncateOptions truncate;
  std::optional<int32_t> dimensions;
};

struct RerankRequest {  // POST /rerank
  std::string query;
  std::vector<std::string> texts;
  bool raw_scores = false;
  bool return_text = false;
  TruncateOptions truncate;
};

struct PredictRequest {  // POST /predict
  // Each input is one text or a pair (sentence-pair classification).
  std::vector<std::vector<std::string>> inputs;
  bool batched = false;  // the body held a list of inputs: the response is a list of lists
  bool raw_scores = false;
  TruncateOptions truncate;
};

struct QaRequest {  // POST /qa
  std::string question, context;
  int32_t top_k = 1;
  int32_t doc_stride = 128;
  int32_t max_answer_len = 15;
  int32_t max_seq_len = 384;
  int32_t max_question_len = 64;
  bool handle_impossible_answer = false;
};

// `max_inputs`: the most inputs one request may carry (--max-client-batch-size).
EmbeddingsRequest ParseEmbeddingsRequest(const nlohmann::json& body, int64_t max_inputs,
                                         int64_t vocab_size);
EmbedRequest ParseEmbedRequest(const nlohmann::json& body, int64_t max_inputs);
RerankRequest ParseRerankRequest(const nlohmann::json& body, int64_t max_inputs);
PredictRequest ParsePredictRequest(const nlohmann::json& body, int64_t max_inputs);
QaRequest ParseQaRequest(const nlohmann::json& body);

// The vector as OpenAI's base64 encoding_format: its little-endian f32 bytes in base64.
std::string Float32Base64(const std::vector<float>& v);

}  // namespace kiln::api
