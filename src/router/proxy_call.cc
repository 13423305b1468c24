#include "router/proxy_call.h"

#include <boost/asio/post.hpp>

#include "api/sse.h"
#include "router/replica.h"
#include "util/error.h"

namespace kiln {
namespace {

bool IsGenerationRoute(const http::Request& r) {
  if (r.method != "POST") return false;
  return r.path == "/generate" || r.path == "/generate_stream" || r.path == "/" ||
         r.path == "/v1/chat/completions" || r.path == "/v1/completions";
}

// Fields that describe one connection, not the message (RFC 9110 7.6.1), and the ones the
// client and server of each hop write themselves.
bool HopByHop(const std::string& lower_name) {
  static const char* const kNames[] = {"connection", "keep-alive",     "proxy-connection",
                                       "te",         "trailer",        "transfer-encoding",
                                       "upgrade",    "content-length", "host",
                                       "expect",     "content-type"};
  for (const char* n : kNames) {
    if (lower_name == n) return true;
  }
  return false;
}

}  // namespace

ProxyCall::ProxyCall(CallHost& host, http::Request request,
                     std::shared_ptr<http::Exchange> exchange, Clock::time_point arrival)
    : host_(host),
      request_(std::move(request)),
      exchange_(std::move(exchange)),
      arrival_(arrival),
      generation_(IsGenerationRoute(request_)),
      openai_(request_.path.rfind("/v1/", 0) == 0),
      trace_(request_, arrival, host.spans()) {}

bool ProxyCall::Excluded(const Replica& r) const {
  for (const auto& [index, generation] : failed_on_) {
    if (index == r.index && generation == r.generation) return true;
  }
  return false;
}

void ProxyCall::WatchClient() {
  std::weak_ptr<ProxyCall> weak = weak_from_this();
  boost::asio::io_context& loop = host_.loop();
  exchange_->OnClose([weak, &loop] {
    boost::asio::post(loop, [weak] {
      if (auto self = weak.lock()) self->ClientGone();
    });
  });
}

void ProxyCall::SendTo(Replica& r) {
  ++attempts_;
  ++r.requests;
  last_replica_ = r.index;
  if (generation_) ++r.outstanding;
  attempt_ = Attempt{r.index, r.generation, r.proxy, 0};
  head_ = http::ReceivedHead{};
  body_.clear();
  in_flight_ = true;
  host_.metrics().ObserveDispatch(std::chrono::duration<double>(Clock::now() - arrival_).count());

  http::ClientRequest upstream;
  upstream.method = request_.method == "HEAD" ? "GET" : request_.method;
  upstream.target = request_.target;
  upstream.body = request_.body;
  for (const auto& [name, value] : request_.headers) {
    if (name == "x-request-id" || name == "traceparent") continue;  // ours replace them
    if (name == "content-type" || !HopByHop(name)) upstream.headers.emplace_back(name, value);
  }
  for (auto& h : trace_.BeginAttempt(r.index)) upstream.headers.push_back(std::move(h));
  auto self = shared_from_this();
  http::StreamCallbacks cb;
  cb.on_head = [self](const http::ReceivedHead& head, Clock::time_point) { self->OnHead(head); };
  cb.on_body = [self](std::string_view bytes, Clock::time_point t) { self->OnBody(bytes, t); };
  cb.on_end = [self](const http::StreamOutcome& o) { self->OnEnd(o); };
  attempt_.id = attempt_.client->Start(std::move(upstream), std::move(cb));
}

void ProxyCall::OnHead(const http::ReceivedHead& head) {
  head_ = head;
  // Held until its first body bytes: until then a failure can still be retried unseen.
  streaming_ = !head.has_length && !Refused();
}

void ProxyCall::OnBody(std::string_view bytes, Clock::time_point arrived) {
  if (client_gone_) return;
  if (!streaming_) {
    body_.append(bytes);
    return;
  }
  if (!exchange_started_) StartStream();
  if (!exchange_->Write(bytes)) {
    // Gone, or too slow a reader: the replica must stop generating for it.
    return ClientGone();
  }
  host_.metrics().ObserveRelay(std::chrono::duration<double>(Clock::now() - arrived).count());
}

void ProxyCall::StartStream() {
  exchange_started_ = true;
  status_ = head_.status;
  exchange_->StartStream(head_.status, ContentType(), ResponseHeaders());
}

void ProxyCall::OnEnd(const http::StreamOutcome& outcome) {
  if (!in_flight_) return;
  in_flight_ = false;
  Attempt attempt = std::move(attempt_);
  attempt_ = Attempt{};
  // The client object may be the last reference to a retired replica's client: drop it after
  // this callback has returned.
  boost::asio::post(host_.loop(), [client = std::move(attempt.client)] {});
  host_.Released(attempt.replica, attempt.generation, generation_);
  trace_.EndAttempt(outcome.end == http::StreamEnd::kComplete ? head_.status : 0);
  if (client_gone_ || finished_) return Finish();
  Replica* r = host_.replica(attempt.replica);
  const bool complete = outcome.end == http::StreamEnd::kComplete;
  if (complete && !exchange_started_ && Refused() && r != nullptr) {
    // The replica was full or draining: another one may have room.
    failed_on_.emplace_back(attempt.replica, attempt.generation);
    if (host_.Retry(shared_from_this(), *r, /*queue_if_busy=*/false)) return;
  }
  if (complete) {
    if (streaming_) {
      if (!exchange_started_) StartStream();
      exchange_->End();
    } else {
      RelayWhole();
    }
    return Finish();
  }
  // The connection to the replica broke (it died, or hung and was killed).
  const std::string why =
      StrCat("lost the connection to replica ", attempt.replica, " (", outcome.error, ")");
  if (exchange_started_) {
    if (r != nullptr) ++r->failures;
    return EndStreamWithError(why);
  }
  failed_on_.emplace_back(attempt.replica, attempt.generation);
  if (r != nullptr && host_.Retry(shared_from_this(), *r, /*queue_if_busy=*/true)) return;
  ++host_.counters().failed;
  Fail(api::ApiError(502, "unavailable", why + "; no replica left to retry on"));
}

void ProxyCall::RelayWhole() {
  http::Response response;
  response.status = status_ = head_.status;
  response.content_type = ContentType();
  response.headers = ResponseHeaders();
  response.body = std::move(body_);
  exchange_->Respond(std::move(response));
}

void ProxyCall::EndStreamWithError(const std::string& why) {
  ++host_.counters().stream_errors;
  exchange_->Write(api::SseData(ErrorJson(api::GenerationError(why))));
  exchange_->End();
  Finish();
}

void ProxyCall::Fail(const api::ApiError& error) {
  if (finished_) return;
  http::Response response;
  response.status = status_ = error.status();
  response.body = ErrorJson(error);
  response.headers.emplace_back("x-request-id", trace_.request_id());
  if (error.status() == 429) response.headers.emplace_back("Retry-After", "1");
  exchange_->Respond(std::move(response));
  Finish();
}

void ProxyCall::ClientGone() {
  if (client_gone_ || finished_) return;
  client_gone_ = true;
  ++host_.counters().client_cancels;
  // Cancel runs OnEnd (kCancelled) before it returns, which releases the replica's slot.
  if (in_flight_) return attempt_.client->Cancel(attempt_.id);
  Finish();
}

void ProxyCall::Finish() {
  if (finished_) return;
  finished_ = true;
  trace_.Finish(status_, last_replica_, attempts_);
  host_.Finished(this);
}

std::string ProxyCall::ErrorJson(const api::ApiError& e) const {
  return openai_ ? api::OpenAiErrorJson(e) : api::TgiErrorJson(e);
}

std::string ProxyCall::ContentType() const {
  for (const auto& [name, value] : head_.headers) {
    if (name == "content-type") return value;
  }
  return "";
}

http::Headers ProxyCall::ResponseHeaders() const {
  http::Headers out;
  for (const auto& [name, value] : head_.headers) {
    if (!HopByHop(name)) out.emplace_back(name, value);
  }
  out.emplace_back("x-kiln-replica", std::to_string(last_replica_));
  return out;
}

}  // namespace kiln
