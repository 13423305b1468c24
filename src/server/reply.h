// How a route answers: JSON responses, errors in the route's wire shape (TGI's or OpenAI's),
// and SSE streams, each with the headers every response of the request carries (CORS).
#pragma once

#include <memory>
#include <string>

#include "api/api_error.h"
#include "http/exchange.h"
#include "http/http_types.h"

namespace kiln {

enum class ErrorStyle { kTgi, kOpenAi };

class Metrics;
class RequestRecord;

struct Reply {
  std::shared_ptr<http::Exchange> exchange;
  http::Headers headers;  // added to every response
  ErrorStyle style = ErrorStyle::kTgi;
  // Counts each response's status (/v1/status); null in tests that build replies by hand.
  // Outlives the reply: it lives in the ServerState that every late caller shares.
  Metrics* metrics = nullptr;
  // The request's access-log line and spans (request_record.h); null in such tests too.
  std::shared_ptr<RequestRecord> record;
};

void RespondJson(const Reply& r, int status, std::string body, http::Headers extra = {});
void RespondText(const Reply& r, int status, std::string content_type, std::string body);
// The error's status and body in the route's style; 429 adds Retry-After.
void RespondError(const Reply& r, const api::ApiError& e);
// 200 text/event-stream, no-cache, X-Accel-Buffering: no (nginx must not buffer it).
void StartSse(const Reply& r);
// An error inside a started stream, then its end: TGI {"error","error_type"} or OpenAI's
// {"error": {...}} as one data frame.
void SseErrorAndEnd(const Reply& r, const api::ApiError& e);
std::string ErrorBody(ErrorStyle style, const api::ApiError& e);

}  // namespace kiln
