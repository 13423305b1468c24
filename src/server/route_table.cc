#include "server/route_table.h"

#include <algorithm>
#include <cctype>

#include "api/api_error.h"
#include "server/request_record.h"
#include "util/bearer_token.h"
#include "util/error.h"
#include "util/log.h"

namespace kiln {
namespace {

void Generate(RouteContext& c) { HandleGenerate(c, GenerateMode::kGenerate); }
void GenerateStream(RouteContext& c) { HandleGenerate(c, GenerateMode::kStream); }
void Compat(RouteContext& c) { HandleGenerate(c, GenerateMode::kCompat); }

// tgi_request_failure{err=...} label of an error.
std::string FailureReason(const api::ApiError& e) {
  if (e.status() == 429) return "overloaded";
  if (e.status() == 503) return "unavailable";
  if (e.type() == "template_error") return "template";
  if (e.status() == 424) return "generation";
  if (e.status() >= 500) return "incomplete";
  return "validation";
}

// 401 in the route's style, with the challenge header.
void RespondUnauthorized(const Reply& reply) {
  RespondJson(reply, 401,
              ErrorBody(reply.style, api::ApiError(401, "authentication",
                                                   "Unauthorized: send `Authorization: Bearer "
                                                   "<api-key>`")),
              {{"WWW-Authenticate", "Bearer"}});
}

}  // namespace

RouteTable::RouteTable(ServerState& state) : state_(state) {
  const auto tgi = ErrorStyle::kTgi, oai = ErrorStyle::kOpenAi;
  routes_ = {
      {"POST", "/generate", false, true, tgi, Generate},
      {"POST", "/generate_stream", false, true, tgi, GenerateStream},
      {"POST", "/", false, true, tgi, Compat},
      {"POST", "/v1/chat/completions", false, true, oai, HandleChatCompletions},
      {"POST", "/v1/completions", false, true, oai, HandleCompletions},
      {"POST", "/tokenize", false, false, tgi, HandleTokenize},
      {"POST", "/v1/embeddings", false, false, oai, HandleEmbeddings},
      {"POST", "/embed", false, false, tgi, HandleEmbed},
      {"POST", "/rerank", false, false, tgi, HandleRerank},
      {"POST", "/predict", false, false, tgi, HandlePredict},
      {"POST", "/qa", false, false, tgi, HandleQa},
      {"GET", "/", true, false, tgi, HandleHealth},
      {"GET", "/health", true, false, tgi, HandleHealth},
      {"GET", "/ping", true, false, tgi, HandleHealth},
      {"GET", "/info", false, false, tgi, HandleInfo},
      {"GET", "/v1/status", false, false, tgi, HandleStatus},
      {"GET", "/metrics", false, false, tgi, HandleMetrics},
      {"GET", "/v1/models", false, false, oai, HandleModels},
      {"GET", "/docs", false, false, tgi, HandleDocs},
      {"GET", "/api-doc/openapi.json", false, false, tgi, HandleOpenApi},
  };
}

http::Headers RouteTable::CorsHeaders(const http::Request& request) const {
  const auto& allowed = state_.config.cors_allow_origins;
  const std::string* origin = request.Header("origin");
  if (allowed.empty() || origin == nullptr) return {};
  const bool any = std::find(allowed.begin(), allowed.end(), "*") != allowed.end();
  if (!any && std::find(allowed.begin(), allowed.end(), *origin) == allowed.end()) return {};
  return {{"Access-Control-Allow-Origin", any ? "*" : *origin}, {"Vary", "Origin"}};
}

bool RouteTable::Authorized(const http::Request& request) const {
  if (state_.config.api_key.empty()) return true;
  return BearerTokenMatches(request.Header("authorization"), state_.config.api_key);
}

void RouteTable::Handle(http::Request request, std::shared_ptr<http::Exchange> exchange) {
  const Clock::time_point arrival = Clock::now();
  auto record = std::make_shared<RequestRecord>(state_.shared_from_this(), request, arrival);
  Reply reply{std::move(exchange), CorsHeaders(request), ErrorStyle::kTgi, &state_.metrics, record};
  reply.headers.emplace_back("x-request-id", record->request_id());
  const std::string method = request.method == "HEAD" ? "GET" : request.method;
  if (request.method == "OPTIONS") {
    http::Headers extra = {{"Allow", "GET, POST, OPTIONS"}};
    if (!reply.headers.empty()) {
      extra.emplace_back("Access-Control-Allow-Methods", "GET, POST, OPTIONS");
      extra.emplace_back("Access-Control-Allow-Headers", "authorization, content-type");
      extra.emplace_back("Access-Control-Max-Age", "600");
    }
    for (auto& h : extra) reply.headers.push_back(std::move(h));
    return RespondText(reply, 204, "", "");
  }
  const Route* match = nullptr;
  std::string allow;  // methods the path does serve
  for (const Route& r : routes_) {
    if (r.path != request.path) continue;
    allow += allow.empty() ? r.method : ", " + r.method;
    if (r.method == method) match = &r;
  }
  if (match == nullptr) {
    if (!allow.empty()) {
      return RespondJson(
          reply, 405,
          api::TgiErrorJson(api::ApiError(405, "method_not_allowed", "Method Not Allowed")),
          {{"Allow", allow}});
    }
    return RespondError(reply, api::ApiError(404, "not_found", "Not Found: " + request.path));
  }
  reply.style = match->style;
  record->SetRoute(match->path, match->generation);
  if (!match->public_route && !Authorized(request)) {
    return RespondUnauthorized(reply);
  }
  RouteContext ctx{state_, request, std::move(reply), arrival};
  Run(*match, ctx);
}

void RouteTable::Reject(http::Request request, std::shared_ptr<http::Exchange> exchange,
                        const api::ApiError& error, ErrorStyle style) {
  auto record = std::make_shared<RequestRecord>(state_.shared_from_this(), request, Clock::now());
  Reply reply{std::move(exchange), CorsHeaders(request), style, &state_.metrics, record};
  reply.headers.emplace_back("x-request-id", record->request_id());
  if (!Authorized(request)) return RespondUnauthorized(reply);
  RespondError(reply, error);
}

void RouteTable::Run(const Route& route, RouteContext& ctx) {
  if (route.generation) state_.metrics.RequestReceived();
  try {
    if (route.generation && state_.backend == nullptr) {
      throw api::ApiError(
          400, "validation",
          StrCat("model '", state_.config.model_id, "' is an encoder (",
                 state_.encoder != nullptr ? state_.encoder->model_config().arch_name
                                           : std::string("none"),
                 "): it serves /embed, /v1/embeddings, /rerank, /predict and "
                 "/qa, not text generation"));
    }
    route.handler(ctx);
    return;
  } catch (const api::ApiError& e) {
    if (route.generation) state_.metrics.RequestFailed(FailureReason(e));
    return RespondError(ctx.reply, e);
  } catch (const kiln::Error& e) {
    // A layer below refused the input (e.g. the tokenizer): the client's doing, not ours.
    if (route.generation) state_.metrics.RequestFailed("validation");
    return RespondError(ctx.reply, api::ValidationError(e.what()));
  } catch (const std::exception& e) {
    log::Error(StrCat("route ", route.path, " failed: ", e.what()));
    if (route.generation) state_.metrics.RequestFailed("incomplete");
    return RespondError(ctx.reply, api::ApiError(500, "internal", "Internal server error"));
  }
}

}  // namespace kiln
