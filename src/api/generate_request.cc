#include "api/generate_request.h"

#include "api/api_error.h"
#include "api/json_fields.h"
#include "util/error.h"

namespace kiln::api {
namespace {

// Fields that change how tokens are chosen; any of them makes TGI sample.
struct Warpers {
  std::optional<float> temperature, top_p, typical_p;
  std::optional<int32_t> top_k;
  bool any() const { return temperature || top_p || typical_p || top_k; }
};

void CheckStreamingRestrictions(const JsonFields& p, bool streaming) {
  if (!streaming) return;
  std::optional<int64_t> best_of = p.Int("best_of", 0, INT64_MAX, "usize");
  if (best_of && *best_of != 1) {
    throw ValidationError("`best_of` != 1 is not supported when streaming tokens", "best_of");
  }
  if (p.Bool("decoder_input_details").value_or(false)) {
    throw ValidationError("`decoder_input_details` == true is not supported when streaming tokens",
                          "decoder_input_details");
  }
}

int32_t ParseBestOf(const JsonFields& p, const ValidationLimits& limits, bool sampling) {
  std::optional<int64_t> given = p.Int("best_of", 0, INT64_MAX, "usize");
  const int64_t best_of = given.value_or(1);
  if (limits.max_best_of == 1 && best_of != 1) {
    throw ValidationError("`best_of` != 1 is not allowed for this endpoint", "best_of");
  }
  if (best_of < 1 || best_of > limits.max_best_of) {
    throw ValidationError(
        StrCat("`best_of` must be > 0 and <= ", limits.max_best_of, ". Given: ", best_of),
        "best_of");
  }
  if (best_of > 1 && !sampling) {
    throw ValidationError("you must use sampling when `best_of` is > 1", "best_of");
  }
  return static_cast<int32_t>(best_of);
}

void ParseSampling(const JsonFields& p, const Warpers& w, GenerationOptions& o) {
  o.temperature = w.temperature.value_or(1.0f);
  if (o.temperature <= 0.0f) {
    throw ValidationError("`temperature` must be strictly positive", "temperature");
  }
  o.repetition_penalty = p.F32("repetition_penalty").value_or(1.0f);
  if (o.repetition_penalty <= 0.0f) {
    throw ValidationError("`repetition_penalty` must be strictly positive", "repetition_penalty");
  }
  o.frequency_penalty = p.F32("frequency_penalty").value_or(0.0f);
  if (o.frequency_penalty < -2.0f || o.frequency_penalty > 2.0f) {
    throw ValidationError("`frequency_penalty` must be >= -2.0 and <= 2.0", "frequency_penalty");
  }
  o.top_p = w.top_p.value_or(1.0f);
  if (w.top_p && (*w.top_p <= 0.0f || *w.top_p >= 1.0f)) {
    throw ValidationError("`top_p` must be > 0.0 and < 1.0", "top_p");
  }
  o.typical_p = w.typical_p.value_or(1.0f);
  if (w.typical_p && (*w.typical_p <= 0.0f || *w.typical_p >= 1.0f)) {
    throw ValidationError("`typical_p` must be > 0.0 and < 1.0", "typical_p");
  }
  o.top_k = w.top_k.value_or(0);
  if (w.top_k && *w.top_k <= 0) {
    throw ValidationError("`top_k` must be strictly positive", "top_k");
  }
}

void ParseStopping(const JsonFields& p, const ValidationLimits& limits, GenerationOptions& o) {
  o.max_new_tokens = p.U32("max_new_tokens");
  if (o.max_new_tokens && *o.max_new_tokens == 0) {
    throw ValidationError("`max_new_tokens` must be strictly positive", "max_new_tokens");
  }
  o.stop = p.StringList("stop", /*allow_single=*/false).value_or(std::vector<std::string>{});
  if (static_cast<int64_t>(o.stop.size()) > limits.max_stop_sequences) {
    throw ValidationError(StrCat("`stop` supports up to ", limits.max_stop_sequences,
                                 " stop sequences. Given: ", o.stop.size()),
                          "stop");
  }
  std::erase(o.stop, std::string());  // an empty stop sequence would match before any text
}

void ParseOutputShape(const JsonFields& p, const ValidationLimits& limits, GenerateRequest& r) {
  r.options.seed = p.Seed("seed", /*allow_negative=*/false);
  if (r.options.seed && r.best_of > 1) {
    throw ValidationError("`seed` must not be set when `best_of` > 1", "seed");
  }
  std::optional<int32_t> top_n = p.U32("top_n_tokens");
  if (top_n && *top_n > limits.max_top_n_tokens) {
    throw ValidationError(
        StrCat("`top_n_tokens` must be >= 0 and <= ", limits.max_top_n_tokens, ". Given: ", *top_n),
        "top_n_tokens");
  }
  r.options.top_n_tokens = top_n.value_or(0);
  r.details = p.Bool("details").value_or(false);
  r.decoder_input_details = p.Bool("decoder_input_details").value_or(false);
  r.return_full_text = p.Bool("return_full_text").value_or(false);
}

void ParseTruncate(const JsonFields& p, const ValidationLimits& limits, GenerationOptions& o) {
  std::optional<int64_t> truncate = p.Int("truncate", 0, INT64_MAX, "usize");
  if (!truncate) return;
  if (*truncate == 0 || *truncate > limits.max_input_tokens) {
    throw ValidationError(StrCat("`truncate` must be strictly positive and less than ",
                                 limits.max_input_tokens, ". Given: ", *truncate),
                          "truncate");
  }
  o.truncate = static_cast<int32_t>(*truncate);
}

// Features TGI has and Kiln does not: refused by name rather than silently ignored.
void RejectUnsupported(const JsonFields& p) {
  if (p.Bool("watermark").value_or(false)) {
    throw ValidationError("`watermark` is not supported by this server", "watermark");
  }
  if (p.Has("grammar")) throw ValidationError("grammar is not supported", "grammar");
  if (p.String("adapter_id")) {
    throw ValidationError("`adapter_id` is not supported: this server has no LoRA adapters",
                          "adapter_id");
  }
}

}  // namespace

bool ReadStreamFlag(const nlohmann::json& body) {
  return JsonFields(body, "").Bool("stream").value_or(false);
}

GenerateRequest ParseGenerateRequest(const nlohmann::json& body, const ValidationLimits& limits,
                                     bool streaming) {
  JsonFields top(body, "");
  GenerateRequest r;
  const nlohmann::json* inputs = top.Get("inputs");
  if (inputs == nullptr) throw WrongTypeError("", "missing field `inputs`");
  r.inputs = *top.String("inputs");
  static const nlohmann::json kEmpty = nlohmann::json::object();
  const nlohmann::json* params = top.Get("parameters");
  JsonFields p(params ? *params : kEmpty, "parameters");

  CheckStreamingRestrictions(p, streaming);
  Warpers w{p.F32("temperature"), p.F32("top_p"), p.F32("typical_p"), p.I32("top_k")};
  // TGI quirk kept for compatibility: a body without "parameters" samples by default
  // (default_parameters() has do_sample: true); a partial object defaults to greedy.
  const bool do_sample = p.Bool("do_sample").value_or(params == nullptr);
  r.best_of = ParseBestOf(p, limits, do_sample || w.any());
  r.options.n = r.best_of;
  ParseSampling(p, w, r.options);
  // As TGI's NextTokenChooser: any warper away from its neutral value implies sampling.
  r.options.do_sample = do_sample || r.options.temperature != 1.0f || r.options.top_k > 0 ||
                        r.options.top_p < 1.0f || r.options.typical_p < 1.0f;
  ParseStopping(p, limits, r.options);
  ParseOutputShape(p, limits, r);
  if (r.inputs.empty()) throw ValidationError("`inputs` cannot be empty", "inputs");
  ParseTruncate(p, limits, r.options);
  RejectUnsupported(p);
  // Logprobs cost a pass over the vocabulary per token: computed when they are shown (details,
  // every stream event) or needed (best_of picks by mean logprob).
  r.options.logprobs = streaming || r.details || r.decoder_input_details || r.best_of > 1;
  return r;
}

}  // namespace kiln::api
