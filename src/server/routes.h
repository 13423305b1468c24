// Route handlers. Each runs on the connection's strand, answers through ctx.reply (now, or
// later from a GenerationCall) and reports problems by throwing api::ApiError, which the
// router turns into the route's error shape.
#pragma once

#include "http/http_types.h"
#include "server/generation_call.h"
#include "server/reply.h"
#include "server/server_state.h"

namespace kiln {

struct RouteContext {
  ServerState& state;
  const http::Request& request;
  Reply reply;
  Clock::time_point arrival;
};

// TGI (tgi_routes.cc)
enum class GenerateMode { kGenerate, kStream, kCompat };  // /generate, /generate_stream, POST /
void HandleGenerate(RouteContext& ctx, GenerateMode mode);
void HandleTokenize(RouteContext& ctx);

// OpenAI (openai_routes.cc)
void HandleChatCompletions(RouteContext& ctx);
void HandleCompletions(RouteContext& ctx);
void HandleModels(RouteContext& ctx);

// Encoders (encoder_routes.cc, qa_route.cc)
void HandleEmbeddings(RouteContext& ctx);  // OpenAI /v1/embeddings
void HandleEmbed(RouteContext& ctx);       // TEI /embed
void HandleRerank(RouteContext& ctx);      // TEI /rerank
void HandlePredict(RouteContext& ctx);     // TEI /predict
void HandleQa(RouteContext& ctx);          // /qa

// Operations (ops_routes.cc)
void HandleHealth(RouteContext& ctx);
void HandleInfo(RouteContext& ctx);
void HandleMetrics(RouteContext& ctx);
void HandleStatus(RouteContext& ctx);  // status_route.cc: what `kiln top` shows
void HandleDocs(RouteContext& ctx);
void HandleOpenApi(RouteContext& ctx);

// The engine's counters: the generation engine's, or what an encoder engine has of them
// (queue, running, cores).
EngineStats BackendStats(const ServerState& state);
// The model's /metrics text (its own, never merged).
std::string RenderMetrics(ServerState& state);
// kiln_encoder_* counters in Prometheus text.
void AppendEncoderMetrics(std::string& text, const EncoderEngineStats& stats);

// Shared by the generation routes: refuses while draining, then takes an admission permit
// (429 "Model is overloaded" when none is left).
Admission::Permit Admit(ServerState& state);
// The tokenizer, or a 422 when the model came without one.
const Tokenizer& RequireTokenizer(const ServerState& state);

}  // namespace kiln
