#include "server/reply.h"

#include "api/sse.h"
#include "server/metrics.h"
#include "server/request_record.h"

namespace kiln {

std::string ErrorBody(ErrorStyle style, const api::ApiError& e) {
  return style == ErrorStyle::kOpenAi ? api::OpenAiErrorJson(e) : api::TgiErrorJson(e);
}

void RespondJson(const Reply& r, int status, std::string body, http::Headers extra) {
  http::Response res;
  res.status = status;
  res.content_type = "application/json";
  res.headers = r.headers;
  for (auto& h : extra) res.headers.push_back(std::move(h));
  res.body = std::move(body);
  if (r.metrics != nullptr) r.metrics->CountResponse(status);
  if (r.record != nullptr) r.record->SetStatus(status);
  r.exchange->Respond(std::move(res));
}

void RespondText(const Reply& r, int status, std::string content_type, std::string body) {
  http::Response res;
  res.status = status;
  res.content_type = std::move(content_type);
  res.headers = r.headers;
  res.body = std::move(body);
  if (r.metrics != nullptr) r.metrics->CountResponse(status);
  if (r.record != nullptr) r.record->SetStatus(status);
  r.exchange->Respond(std::move(res));
}

void RespondError(const Reply& r, const api::ApiError& e) {
  http::Headers extra;
  if (e.status() == 429) extra.emplace_back("Retry-After", "1");
  RespondJson(r, e.status(), ErrorBody(r.style, e), std::move(extra));
}

void StartSse(const Reply& r) {
  http::Headers headers = r.headers;
  headers.emplace_back("Cache-Control", "no-cache");
  headers.emplace_back("X-Accel-Buffering", "no");
  if (r.metrics != nullptr) r.metrics->CountResponse(200);
  if (r.record != nullptr) r.record->SetStatus(200);
  r.exchange->StartStream(200, "text/event-stream", std::move(headers));
}

void SseErrorAndEnd(const Reply& r, const api::ApiError& e) {
  r.exchange->Write(api::SseData(ErrorBody(r.style, e)));
  r.exchange->End();
}

}  // namespace kiln
