#include "api/openai_common.h"

#include <cerrno>
#include <cstdlib>
#include <limits>

#include "api/api_error.h"
#include "util/error.h"

namespace kiln::api {
namespace {

// `lo_text`/`hi_text`: the bounds as TGI words them ("-2.0").
void CheckRange(std::optional<float> v, float lo, float hi, const char* name, const char* lo_text,
                const char* hi_text) {
  if (v && (*v < lo || *v > hi)) {
    throw ValidationError(StrCat("`", name, "` must be >= ", lo_text, " and <= ", hi_text), name);
  }
}

void ParseSampling(const JsonFields& f, GenerationOptions& o) {
  std::optional<float> temperature = f.F32("temperature");
  if (temperature && *temperature < 0.0f) {
    throw ValidationError("`temperature` must be non-negative", "temperature");
  }
  // OpenAI's default is sampling at temperature 1; 0 asks for greedy decoding.
  o.do_sample = !temperature || *temperature > 0.0f;
  o.temperature = o.do_sample ? temperature.value_or(1.0f) : 1.0f;
  std::optional<float> top_p = f.F32("top_p");
  if (top_p && (*top_p <= 0.0f || *top_p > 1.0f)) {
    throw ValidationError("`top_p` must be > 0.0 and <= 1.0", "top_p");
  }
  o.top_p = top_p.value_or(1.0f);
  std::optional<int32_t> top_k = f.I32("top_k");
  if (top_k && *top_k < -1) {
    throw ValidationError("`top_k` must be -1 (disabled) or a positive integer", "top_k");
  }
  o.top_k = top_k && *top_k > 0 ? *top_k : 0;
  std::optional<float> min_p = f.F32("min_p");
  CheckRange(min_p, 0.0f, 1.0f, "min_p", "0.0", "1.0");
  o.min_p = min_p.value_or(0.0f);
  std::optional<float> frequency = f.F32("frequency_penalty");
  CheckRange(frequency, -2.0f, 2.0f, "frequency_penalty", "-2.0", "2.0");
  o.frequency_penalty = frequency.value_or(0.0f);
  std::optional<float> presence = f.F32("presence_penalty");
  CheckRange(presence, -2.0f, 2.0f, "presence_penalty", "-2.0", "2.0");
  o.presence_penalty = presence.value_or(0.0f);
  o.repetition_penalty = f.F32("repetition_penalty").value_or(1.0f);
  if (o.repetition_penalty <= 0.0f) {
    throw ValidationError("`repetition_penalty` must be strictly positive", "repetition_penalty");
  }
  o.seed = f.Seed("seed", /*allow_negative=*/true);
}

std::vector<std::pair<int32_t, float>> ParseLogitBias(const JsonFields& f) {
  std::vector<std::pair<int32_t, float>> out;
  const nlohmann::json* bias = f.Get("logit_bias");
  if (bias == nullptr) return out;
  JsonFields entries(*bias, f.PathOf("logit_bias"));
  for (const auto& [key, value] : bias->items()) {
    errno = 0;
    char* end = nullptr;
    long id = std::strtol(key.c_str(), &end, 10);
    if (key.empty() || *end != '\0' || errno != 0 || id < 0 ||
        id > std::numeric_limits<int32_t>::max()) {
      throw ValidationError(StrCat("`logit_bias` keys must be token ids. Given: \"", key, "\""),
                            "logit_bias");
    }
    std::optional<float> b = entries.F32(key);
    if (!b) continue;
    if (*b < -100.0f || *b > 100.0f) {
      throw ValidationError("`logit_bias` values must be >= -100 and <= 100", "logit_bias");
    }
    out.emplace_back(static_cast<int32_t>(id), *b);
  }
  return out;
}

void ParseStopping(const JsonFields& f, const ValidationLimits& limits,
                   std::optional<int32_t> default_max_tokens, GenerationOptions& o) {
  const char* name = f.Has("max_completion_tokens") ? "max_completion_tokens" : "max_tokens";
  std::optional<int32_t> max_tokens = f.U32(name);
  if (max_tokens && *max_tokens == 0) {
    throw ValidationError(StrCat("`", name, "` must be strictly positive"), name);
  }
  o.max_new_tokens = max_tokens ? max_tokens : default_max_tokens;
  o.min_tokens = f.U32("min_tokens").value_or(0);
  if (o.max_new_tokens && o.min_tokens > *o.max_new_tokens) {
    throw ValidationError(StrCat("`min_tokens` must be less than or equal to `", name,
                                 "`. Given: ", o.min_tokens, " and ", *o.max_new_tokens),
                          "min_tokens");
  }
  o.stop = f.StringList("stop", /*allow_single=*/true).value_or(std::vector<std::string>{});
  if (static_cast<int64_t>(o.stop.size()) > limits.max_stop_sequences) {
    throw ValidationError(StrCat("`stop` supports up to ", limits.max_stop_sequences,
                                 " stop sequences. Given: ", o.stop.size()),
                          "stop");
  }
  std::erase(o.stop, std::string());
  o.stop_token_ids = f.IntList("stop_token_ids", 0, std::numeric_limits<int32_t>::max())
                         .value_or(std::vector<int32_t>{});
  o.ignore_eos = f.Bool("ignore_eos").value_or(false);
  o.skip_special_tokens = f.Bool("skip_special_tokens").value_or(true);
}

}  // namespace

GenerationOptions ParseOpenAiOptions(const JsonFields& f, const ValidationLimits& limits,
                                     std::optional<int32_t> default_max_tokens) {
  GenerationOptions o;
  ParseSampling(f, o);
  o.logit_bias = ParseLogitBias(f);
  ParseStopping(f, limits, default_max_tokens, o);
  std::optional<int64_t> n = f.Int("n", 0, std::numeric_limits<int64_t>::max(), "usize");
  if (n && (*n < 1 || *n > limits.max_n)) {
    throw ValidationError(StrCat("`n` must be > 0 and <= ", limits.max_n, ". Given: ", *n), "n");
  }
  o.n = static_cast<int32_t>(n.value_or(1));
  return o;
}

StreamOptions ParseStreamOptions(const JsonFields& f) {
  StreamOptions s;
  s.stream = f.Bool("stream").value_or(false);
  const nlohmann::json* options = f.Get("stream_options");
  if (options == nullptr) return s;
  // Accepted without stream too (vLLM refuses it): clients send it unconditionally, and it
  // changes nothing in a non-streamed response.
  JsonFields o(*options, f.PathOf("stream_options"));
  s.include_usage = o.Bool("include_usage").value_or(false);
  s.continuous_usage_stats = o.Bool("continuous_usage_stats").value_or(false);
  return s;
}

void RejectResponseFormat(const JsonFields& f) {
  const nlohmann::json* format = f.Get("response_format");
  if (format == nullptr) return;
  JsonFields fields(*format, f.PathOf("response_format"));
  std::string type = fields.String("type").value_or("text");
  if (type == "text") return;
  throw ValidationError(StrCat("`response_format` of type `", type,
                               "` is not supported: this server has no constrained decoding"),
                        "response_format");
}

}  // namespace kiln::api
