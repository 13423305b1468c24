// OpenAI routes: POST /v1/chat/completions, /v1/completions and GET /v1/models.
#include <memory>

#include "api/api_error.h"
#include "api/chat_request.h"
#include "api/completion_request.h"
#include "api/json_input.h"
#include "api/json_output.h"
#include "server/openai_call.h"
#include "server/prompt.h"
#include "server/routes.h"

namespace kiln {
namespace {

// Token ids a request names directly must exist in the vocabulary.
void CheckOptionIds(const api::GenerationOptions& o, int64_t vocab_size) {
  CheckTokenIds(o.stop_token_ids, vocab_size, "stop_token_ids");
  for (const auto& [id, bias] : o.logit_bias) {
    CheckTokenIds(std::span<const int32_t>(&id, 1), vocab_size, "logit_bias");
  }
}

std::string RenderChat(const ServerState& state, const api::ChatRequest& req) {
  try {
    return state.chat_template(req.messages, req.add_generation_prompt);
  } catch (const api::ApiError&) {
    throw;
  } catch (const std::exception& e) {
    throw api::ApiError(422, "template_error", std::string("Template error: ") + e.what());
  }
}

void Launch(RouteContext& ctx, Admission::Permit permit, OpenAiCallOptions options,
            std::vector<GenerationRequest> requests) {
  const bool stream = options.stream.stream;
  auto call = std::make_shared<OpenAiCall>(ctx.state, ctx.reply, std::move(permit), ctx.arrival,
                                           std::move(options));
  call->Submit(std::move(requests));
  if (stream) StartSse(ctx.reply);  // only once admitted: refusals keep their real status
}

}  // namespace

void HandleChatCompletions(RouteContext& ctx) {
  const nlohmann::json body = api::ParseJsonObject(ctx.request.body);
  api::ChatRequest req = api::ParseChatRequest(body, ctx.state.config.limits);
  Admission::Permit permit = Admit(ctx.state);
  const Tokenizer& tokenizer = RequireTokenizer(ctx.state);
  CheckOptionIds(req.options, tokenizer.vocab_size());
  std::vector<int32_t> ids = EncodePrompt(tokenizer, RenderChat(ctx.state, req));
  std::vector<GenerationRequest> requests;
  requests.push_back(MakeEngineRequest(req.options, std::move(ids), ctx.state.config.limits));
  OpenAiCallOptions options;
  options.chat = true;
  options.stream = req.stream;
  options.model = ctx.state.config.model_id;
  options.logprobs = req.options.logprobs;
  Launch(ctx, std::move(permit), std::move(options), std::move(requests));
}

void HandleCompletions(RouteContext& ctx) {
  const nlohmann::json body = api::ParseJsonObject(ctx.request.body);
  api::CompletionRequest req = api::ParseCompletionRequest(body, ctx.state.config.limits);
  Admission::Permit permit = Admit(ctx.state);
  const Tokenizer& tokenizer = RequireTokenizer(ctx.state);
  CheckOptionIds(req.options, tokenizer.vocab_size());
  OpenAiCallOptions options;
  options.chat = false;
  options.stream = req.stream;
  options.model = ctx.state.config.model_id;
  options.logprobs = req.options.logprobs;
  std::vector<GenerationRequest> requests;
  for (api::CompletionPrompt& prompt : req.prompts) {
    std::vector<int32_t> ids;
    if (prompt.is_tokens) {
      if (prompt.token_ids.empty())
        throw api::ValidationError("`prompt` cannot be empty", "prompt");
      CheckTokenIds(prompt.token_ids, tokenizer.vocab_size(), "prompt");
      ids = std::move(prompt.token_ids);
    } else {
      ids = EncodePrompt(tokenizer, prompt.text);
    }
    if (req.echo) {
      options.echo_prefix.push_back(prompt.is_tokens ? tokenizer.Decode(ids, false) : prompt.text);
    }
    requests.push_back(MakeEngineRequest(req.options, std::move(ids), ctx.state.config.limits));
  }
  Launch(ctx, std::move(permit), std::move(options), std::move(requests));
}

void HandleModels(RouteContext& ctx) {
  const ServerConfig& c = ctx.state.config;
  nlohmann::json card = {{"id", c.model_id},
                         {"object", "model"},
                         {"created", 0},
                         {"owned_by", "kiln"},
                         {"root", c.model_id},
                         {"parent", nullptr},
                         {"max_model_len", c.limits.max_total_tokens}};
  nlohmann::json data =
      ctx.state.model_list ? ctx.state.model_list() : nlohmann::json::array({card});
  RespondJson(ctx.reply, 200, api::DumpJson({{"object", "list"}, {"data", std::move(data)}}));
}

}  // namespace kiln
