// TGI routes: POST /generate, /generate_stream, / (compat) and /tokenize.
#include <memory>

#include "api/api_error.h"
#include "api/generate_request.h"
#include "api/json_fields.h"
#include "api/json_input.h"
#include "api/json_output.h"
#include "server/prompt.h"
#include "server/routes.h"
#include "server/tgi_calls.h"

namespace kiln {

Admission::Permit Admit(ServerState& state) {
  if (state.draining) throw api::ShuttingDownError();
  if (state.backend == nullptr && state.encoder == nullptr) {
    throw api::ApiError(503, "unhealthy", "no model is loaded");
  }
  std::optional<Admission::Permit> permit = state.admission.TryAcquire();
  if (!permit) throw api::OverloadedError();
  return std::move(*permit);
}

const Tokenizer& RequireTokenizer(const ServerState& state) {
  if (state.tokenizer == nullptr) {
    throw api::ValidationError("this server has no tokenizer for its model");
  }
  return *state.tokenizer;
}

void HandleGenerate(RouteContext& ctx, GenerateMode mode) {
  const nlohmann::json body = api::ParseJsonObject(ctx.request.body);
  const bool stream =
      mode == GenerateMode::kStream || (mode == GenerateMode::kCompat && api::ReadStreamFlag(body));
  const api::ValidationLimits& limits = ctx.state.config.limits;
  api::GenerateRequest req = api::ParseGenerateRequest(body, limits, stream);
  Admission::Permit permit = Admit(ctx.state);
  std::vector<int32_t> ids = EncodePrompt(RequireTokenizer(ctx.state), req.inputs);
  Truncate(ids, req.options);
  TgiCallOptions options;
  options.input_length = static_cast<int32_t>(ids.size());
  GenerationRequest engine_request = MakeEngineRequest(req.options, std::move(ids), limits);
  options.inputs = std::move(req.inputs);
  options.details = req.details || req.decoder_input_details;
  options.return_full_text = req.return_full_text;
  options.do_sample = req.options.do_sample;
  options.compat_array = mode == GenerateMode::kCompat && !stream;
  std::shared_ptr<GenerationCall> call;
  if (stream) {
    call = std::make_shared<TgiStreamCall>(ctx.state, ctx.reply, std::move(permit), ctx.arrival,
                                           std::move(options));
  } else {
    call = std::make_shared<TgiGenerateCall>(ctx.state, ctx.reply, std::move(permit), ctx.arrival,
                                             std::move(options));
  }
  std::vector<GenerationRequest> requests;
  requests.push_back(std::move(engine_request));
  call->Submit(std::move(requests));
  if (stream) StartSse(ctx.reply);  // only once admitted: refusals keep their real status
}

namespace {

// Where each token's text sits in the input, as byte offsets; tokens whose text is not found
// there (BOS, a leading space the tokenizer added) get an empty span.
nlohmann::json TokenSpans(const Tokenizer& tokenizer, const std::string& input,
                          const std::vector<int32_t>& ids) {
  nlohmann::json out = nlohmann::json::array();
  size_t pos = 0;
  for (int32_t id : ids) {
    std::string piece = tokenizer.TokenPiece(id);
    size_t start = pos, stop = pos;
    if (!piece.empty() && input.compare(pos, piece.size(), piece) == 0) {
      stop = pos + piece.size();
    } else if (piece.size() > 1 && piece[0] == ' ' &&
               input.compare(pos, piece.size() - 1, piece, 1) == 0) {
      stop = pos + piece.size() - 1;
    }
    pos = stop;
    out.push_back({{"id", id},
                   {"text", stop > start ? input.substr(start, stop - start) : piece},
                   {"start", start},
                   {"stop", stop}});
  }
  return out;
}

}  // namespace

void HandleTokenize(RouteContext& ctx) {
  const nlohmann::json body = api::ParseJsonObject(ctx.request.body);
  api::JsonFields fields(body, "");
  std::optional<std::string> inputs = fields.String("inputs");
  if (!inputs) throw api::WrongTypeError("", "missing field `inputs`");
  if (inputs->empty()) throw api::ValidationError("`inputs` cannot be empty", "inputs");
  const Tokenizer& tokenizer = RequireTokenizer(ctx.state);
  std::vector<int32_t> ids = EncodePrompt(tokenizer, *inputs);
  RespondJson(ctx.reply, 200, api::DumpJson(TokenSpans(tokenizer, *inputs, ids)));
}

}  // namespace kiln
