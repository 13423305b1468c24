// One client request on its way through the router: sent to a replica with its method, target,
// headers and body; the answer relayed back as it arrives (a streamed response chunk by chunk,
// never buffered; a complete one whole). The request is kept until the first byte went to the
// client, so a replica that fails before that (it died, its connection broke, it refused with
// 429/503) costs a re-dispatch, not an error. A stream the replica abandons midway ends with
// an error event in the route's shape. A client that leaves cancels the replica's request.
// Loop thread only, except where noted.
#pragma once

#include <boost/asio/io_context.hpp>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "api/api_error.h"
#include "http/client/http_client.h"
#include "http/exchange.h"
#include "http/http_types.h"
#include "router/call_trace.h"
#include "router/router_metrics.h"
#include "telemetry/span_exporter.h"

namespace kiln {

class ProxyCall;
struct Replica;

// What a call needs of whoever dispatches it (the Dispatcher): where to hand its replica slot
// back, how to be re-dispatched, the loop, the metrics. Loop thread only.
class CallHost {
 public:
  virtual ~CallHost() = default;
  // `call` failed on `r` before its first byte: false when it cannot be re-dispatched.
  virtual bool Retry(std::shared_ptr<ProxyCall> call, Replica& r, bool queue_if_busy) = 0;
  // A request on replica `index` (as of `generation`) ended.
  virtual void Released(int index, uint64_t generation, bool generation_route) = 0;
  // The call has answered, or its client left.
  virtual void Finished(ProxyCall* call) = 0;
  // The replica numbered `index`, or nullptr (none such, or the router is stopping).
  virtual Replica* replica(int index) = 0;
  virtual RouterCounters& counters() = 0;
  virtual RouterMetrics& metrics() = 0;
  virtual boost::asio::io_context& loop() = 0;
  // The router's span exporter, or null when it does not trace.
  virtual telemetry::SpanExporter* spans() = 0;
};

class ProxyCall : public std::enable_shared_from_this<ProxyCall> {
 public:
  using Clock = std::chrono::steady_clock;

  ProxyCall(CallHost& host, http::Request request, std::shared_ptr<http::Exchange> exchange,
            Clock::time_point arrival);

  // Counted against a replica's capacity (generation routes), or not (tokenize, info...).
  bool generation() const { return generation_; }
  const std::optional<uint64_t>& prefix_key() const { return prefix_key_; }
  void set_prefix_key(std::optional<uint64_t> key) { prefix_key_ = key; }
  // Whether this call already failed on `r` as it runs now (a restarted replica is new).
  bool Excluded(const Replica& r) const;
  int attempts() const { return attempts_; }
  bool client_gone() const { return client_gone_; }
  bool finished() const { return finished_; }
  Clock::time_point arrival() const { return arrival_; }
  const std::string& body() const { return request_.body; }
  Clock::time_point queued_at() const { return queued_at_; }
  void set_queued_at(Clock::time_point t) { queued_at_ = t; }

  // Sends the request to `r` (counts it in r's outstanding requests).
  void SendTo(Replica& r);
  // Answers with the router's own error, in the route's shape.
  void Fail(const api::ApiError& error);
  // The client disconnected: cancel the replica's request, or leave the queue.
  void ClientGone();
  // Any thread: watch the client (posts ClientGone to the loop).
  void WatchClient();

 private:
  struct Attempt {
    int replica = -1;
    uint64_t generation = 0;
    std::shared_ptr<http::HttpClient> client;
    uint64_t id = 0;
  };

  void OnHead(const http::ReceivedHead& head);
  void OnBody(std::string_view bytes, Clock::time_point arrived);
  void OnEnd(const http::StreamOutcome& outcome);
  void StartStream();
  void RelayWhole();
  void Finish();
  void EndStreamWithError(const std::string& why);
  bool Refused() const { return head_.status == 429 || head_.status == 503; }
  std::string ErrorJson(const api::ApiError& e) const;
  http::Headers ResponseHeaders() const;
  std::string ContentType() const;

  CallHost& host_;
  http::Request request_;
  std::shared_ptr<http::Exchange> exchange_;
  Clock::time_point arrival_, queued_at_;
  bool generation_ = false;
  bool openai_ = false;
  std::optional<uint64_t> prefix_key_;

  int attempts_ = 0;
  std::vector<std::pair<int, uint64_t>> failed_on_;  // (replica, generation)
  Attempt attempt_;
  bool in_flight_ = false;  // a replica has the request now
  http::ReceivedHead head_;
  std::string body_;               // a response with Content-Length, until complete
  bool streaming_ = false;         // relaying chunk by chunk
  bool exchange_started_ = false;  // the client has the head: no retry from here on
  int last_replica_ = -1;
  int status_ = 0;  // what the client was answered; 0 until then
  CallTrace trace_;
  bool client_gone_ = false;
  bool finished_ = false;
};

}  // namespace kiln
