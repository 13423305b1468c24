#include "api/encoder_request.h"

#include <cstring>

#include "api/api_error.h"
#include "api/json_fields.h"
#include "util/error.h"

namespace kiln::api {
namespace {

// The 413 TEI answers when a batch is too large (its error_type "validation").
ApiError TooManyInputs(size_t n, int64_t max) {
  return ApiError(413, "validation",
                  StrCat("batch size ", n, " > maximum allowed batch size ", max), "inputs");
}

ApiError EmptyError(const std::string& field) {
  return ApiError(400, "empty", StrCat("`", field, "` cannot be empty"), field);
}

TruncateOptions ReadTruncate(const JsonFields& f) {
  TruncateOptions t;
  t.truncate = f.Bool("truncate").value_or(false);
  if (std::optional<std::string> dir = f.String("truncation_direction")) {
    if (*dir != "Left" && *dir != "Right" && *dir != "left" && *dir != "right") {
      throw WrongTypeError(f.PathOf("truncation_direction"),
                           StrCat("unknown variant `", *dir, "`, expected `Left` or `Right`"));
    }
    t.left = *dir == "Left" || *dir == "left";
  }
  return t;
}

std::optional<int32_t> ReadDimensions(const JsonFields& f) {
  std::optional<int64_t> d = f.Int("dimensions", 1, 1 << 20, "usize");
  if (!d) return std::nullopt;
  return static_cast<int32_t>(*d);
}

void CheckTexts(const std::vector<std::string>& texts, const std::string& field, int64_t max) {
  if (texts.empty()) throw EmptyError(field);
  if (static_cast<int64_t>(texts.size()) > max) throw TooManyInputs(texts.size(), max);
  for (const std::string& t : texts) {
    if (t.empty()) throw EmptyError(field);
  }
}

// OpenAI's `input`: a string, a list of strings, a list of token ids, or a list of lists.
std::vector<EncoderInput> ReadOpenAiInput(const nlohmann::json& v, int64_t vocab_size) {
  std::vector<EncoderInput> out;
  auto ids = [&](const nlohmann::json& list, const std::string& path) {
    EncoderInput in;
    in.ids = ReadIntList(list, path, 0, vocab_size - 1);
    if (in.ids->empty()) throw ValidationError("`input` cannot hold an empty list", "input");
    return in;
  };
  if (v.is_string()) {
    out.push_back({v.get<std::string>(), std::nullopt});
  } else if (v.is_array() && !v.empty() && v[0].is_number()) {
    out.push_back(ids(v, "input"));
  } else if (v.is_array()) {
    for (size_t i = 0; i < v.size(); ++i) {
      const std::string path = StrCat("input[", i, "]");
      if (v[i].is_string()) {
        out.push_back({v[i].get<std::string>(), std::nullopt});
      } else if (v[i].is_array()) {
        out.push_back(ids(v[i], path));
      } else {
        throw WrongTypeError(path, StrCat("invalid type: ", DescribeJsonValue(v[i]),
                                          ", expected a string or a list of token ids"));
      }
    }
  } else {
    throw WrongTypeError(
        "input", StrCat("invalid type: ", DescribeJsonValue(v), ", expected a string or a list"));
  }
  for (const EncoderInput& in : out) {
    if (!in.ids && in.text.empty()) throw ValidationError("`input` cannot be empty", "input");
  }
  return out;
}

}  // namespace

EmbeddingsRequest ParseEmbeddingsRequest(const nlohmann::json& body, int64_t max_inputs,
                                         int64_t vocab_size) {
  JsonFields f(body, "");
  EmbeddingsRequest r;
  r.model = f.String("model").value_or("");
  const nlohmann::json* input = f.Get("input");
  if (input == nullptr) throw WrongTypeError("", "missing field `input`");
  r.inputs = ReadOpenAiInput(*input, vocab_size);
  if (r.inputs.empty()) throw ValidationError("`input` cannot be empty", "input");
  if (static_cast<int64_t>(r.inputs.size()) > max_inputs) {
    throw ValidationError(
        StrCat("`input` holds ", r.inputs.size(), " inputs; at most ", max_inputs, " are allowed"),
        "input");
  }
  const std::string format = f.String("encoding_format").value_or("float");
  if (format != "float" && format != "base64") {
    throw ValidationError(
        StrCat("`encoding_format` must be \"float\" or \"base64\", not \"", format, "\""),
        "encoding_format");
  }
  r.base64 = format == "base64";
  r.dimensions = ReadDimensions(f);
  return r;
}

EmbedRequest ParseEmbedRequest(const nlohmann::json& body, int64_t max_inputs) {
  JsonFields f(body, "");
  EmbedRequest r;
  std::optional<std::vector<std::string>> inputs = f.StringList("inputs", true);
  if (!inputs) throw WrongTypeError("", "missing field `inputs`");
  CheckTexts(*inputs, "inputs", max_inputs);
  r.inputs = std::move(*inputs);
  r.normalize = f.Bool("normalize").value_or(true);
  r.truncate = ReadTruncate(f);
  r.dimensions = ReadDimensions(f);
  if (f.Has("prompt_name")) {
    throw ValidationError("`prompt_name` is not supported: the model has no prompts configured",
                          "prompt_name");
  }
  return r;
}

RerankRequest ParseRerankRequest(const nlohmann::json& body, int64_t max_inputs) {
  JsonFields f(body, "");
  RerankRequest r;
  std::optional<std::string> query = f.String("query");
  if (!query) throw WrongTypeError("", "missing field `query`");
  if (query->empty()) throw EmptyError("query");
  r.query = std::move(*query);
  std::optional<std::vector<std::string>> texts = f.StringList("texts", false);
  if (!texts) throw WrongTypeError("", "missing field `texts`");
  CheckTexts(*texts, "texts", max_inputs);
  r.texts = std::move(*texts);
  r.raw_scores = f.Bool("raw_scores").value_or(false);
  r.return_text = f.Bool("return_text").value_or(false);
  r.truncate = ReadTruncate(f);
  return r;
}

PredictRequest ParsePredictRequest(const nlohmann::json& body, int64_t max_inputs) {
  JsonFields f(body, "");
  PredictRequest r;
  const nlohmann::json* v = f.Get("inputs");
  if (v == nullptr) throw WrongTypeError("", "missing field `inputs`");
  auto one = [&](const nlohmann::json& item, const std::string& path) {
    std::vector<std::string> texts;
    if (item.is_string()) {
      texts.push_back(item.get<std::string>());
    } else if (item.is_array() && (item.size() == 1 || item.size() == 2) && item[0].is_string() &&
               item.back().is_string()) {
      for (const nlohmann::json& t : item) texts.push_back(t.get<std::string>());
    } else {
      throw WrongTypeError(path, StrCat("invalid type: ", DescribeJsonValue(item),
                                        ", expected a string or a pair of strings"));
    }
    for (const std::string& t : texts) {
      if (t.empty()) throw EmptyError("inputs");
    }
    return texts;
  };
  // "text", ["a", "b"] (one pair), [["a", "b"], ...] or ["a", "b", "c"] when not a pair.
  if (v->is_string()) {
    r.inputs.push_back(one(*v, "inputs"));
  } else if (v->is_array() && !v->empty() && v->size() <= 2 && (*v)[0].is_string() &&
             v->back().is_string()) {
    r.inputs.push_back(one(*v, "inputs"));
  } else if (v->is_array()) {
    r.batched = true;
    for (size_t i = 0; i < v->size(); ++i)
      r.inputs.push_back(one((*v)[i], StrCat("inputs[", i, "]")));
  } else {
    throw WrongTypeError(
        "inputs", StrCat("invalid type: ", DescribeJsonValue(*v), ", expected a string or a list"));
  }
  if (r.inputs.empty()) throw EmptyError("inputs");
  if (static_cast<int64_t>(r.inputs.size()) > max_inputs) {
    throw TooManyInputs(r.inputs.size(), max_inputs);
  }
  r.raw_scores = f.Bool("raw_scores").value_or(false);
  r.truncate = ReadTruncate(f);
  return r;
}

QaRequest ParseQaRequest(const nlohmann::json& body) {
  JsonFields f(body, "");
  QaRequest r;
  std::optional<std::string> q = f.String("question"), c = f.String("context");
  if (!q) throw WrongTypeError("", "missing field `question`");
  if (!c) throw WrongTypeError("", "missing field `context`");
  if (q->empty()) throw EmptyError("question");
  if (c->empty()) throw EmptyError("context");
  r.question = std::move(*q);
  r.context = std::move(*c);
  auto positive = [&](const char* key, int32_t fallback, int64_t max) {
    return static_cast<int32_t>(f.Int(key, 1, max, "usize").value_or(fallback));
  };
  r.top_k = positive("top_k", 1, 64);
  r.max_answer_len = positive("max_answer_len", 15, 1 << 16);
  r.max_seq_len = positive("max_seq_len", 384, 1 << 16);
  r.max_question_len = positive("max_question_len", 64, 1 << 16);
  r.doc_stride = static_cast<int32_t>(f.Int("doc_stride", 0, 1 << 16, "usize").value_or(-1));
  r.handle_impossible_answer = f.Bool("handle_impossible_answer").value_or(false);
  return r;
}

std::string Float32Base64(const std::vector<float>& v) {
  static constexpr char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string bytes(v.size() * sizeof(float), '\0');
  std::memcpy(bytes.data(), v.data(), bytes.size());  // x86: already little-endian
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  for (size_t i = 0; i < bytes.size(); i += 3) {
    const size_t n = std::min<size_t>(3, bytes.size() - i);
    uint32_t chunk = 0;
    for (size_t j = 0; j < 3; ++j) {
      chunk = (chunk << 8) | (j < n ? static_cast<uint8_t>(bytes[i + j]) : 0);
    }
    for (size_t j = 0; j < 4; ++j) {
      out.push_back(j <= n ? kAlphabet[(chunk >> (18 - 6 * j)) & 63] : '=');
    }
  }
  return out;
}

}  // namespace kiln::api
