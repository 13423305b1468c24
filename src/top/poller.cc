#include "top/poller.h"

#include <boost/asio/io_context.hpp>

#include "http/client/http_client.h"
#include "http/client/url.h"

namespace kiln::top {
namespace {

// Bodies larger than this are not a status document; stop buffering them.
constexpr size_t kMaxBody = 1 << 20;

struct Answer {
  bool done = false;
  http::StreamOutcome outcome;
  std::string body;
};

// The row labelled `label` out of `old` (its history kept), or a new one.
TargetView TakeRow(std::vector<TargetView>& old, const std::string& label) {
  for (TargetView& v : old) {
    if (v.url == label) return std::move(v);
  }
  TargetView fresh;
  fresh.url = label;
  return fresh;
}

// Every row of the target fails the same way (a router that is down takes its replicas).
void FailAll(std::vector<TargetView>& rows, const std::string& url, Health h,
             const std::string& why) {
  if (rows.empty()) rows.push_back(TakeRow(rows, url));
  for (TargetView& v : rows) v.Fail(h, why);
}

void Judge(std::vector<TargetView>& rows, const std::string& url, const Answer& a) {
  const http::StreamOutcome& o = a.outcome;
  if (!a.done || o.end != http::StreamEnd::kComplete) {
    return FailAll(rows, url, Health::kUnreachable,
                   o.error.empty() ? "no answer in time" : o.error);
  }
  if (o.status == 401) return FailAll(rows, url, Health::kNotKiln, "HTTP 401: pass --api-key");
  if (o.status != 200) {
    return FailAll(rows, url, Health::kNotKiln,
                   "not a Kiln server: GET /v1/status answered HTTP " + std::to_string(o.status));
  }
  std::vector<TargetView> next;
  for (ReplicaStatus& r : ParseStatusDocument(a.body)) {
    const bool single = r.index < 0;
    next.push_back(TakeRow(rows, single ? url : url + " #" + std::to_string(r.index)));
    TargetView& v = next.back();
    if (r.status.snapshot) {
      v.Update(std::move(*r.status.snapshot));
    } else {
      v.Fail(single ? Health::kNotKiln : Health::kUnreachable, r.status.error);
    }
  }
  if (next.empty()) return FailAll(rows, url, Health::kNotKiln, "a router with no replicas");
  rows = std::move(next);
}

}  // namespace

struct Poller::Impl {
  boost::asio::io_context io;
  std::vector<http::Url> urls;
  std::vector<std::string> url_texts;                      // as given: the rows' labels
  std::vector<std::unique_ptr<http::HttpClient>> clients;  // null until the host resolves
  std::string api_key;
  std::chrono::milliseconds timeout;

  http::HttpClient* Client(size_t i, std::vector<TargetView>& rows) {
    if (clients[i]) return clients[i].get();
    http::ClientOptions options;
    options.connect_timeout = timeout;
    options.idle_timeout = timeout;
    options.user_agent = "kiln-top";
    try {
      clients[i] = std::make_unique<http::HttpClient>(io, urls[i], options);
    } catch (const std::exception& e) {
      FailAll(rows, url_texts[i], Health::kUnreachable, e.what());  // DNS: again next round
    }
    return clients[i].get();
  }

  void Start(size_t i, http::HttpClient& client, Answer& answer) {
    http::ClientRequest request;
    request.method = "GET";
    request.target = urls[i].Join("/v1/status");
    if (!api_key.empty()) request.headers.emplace_back("Authorization", "Bearer " + api_key);
    http::StreamCallbacks cb;
    cb.on_body = [&answer](std::string_view bytes, http::Clock::time_point) {
      if (answer.body.size() < kMaxBody) answer.body.append(bytes);
    };
    cb.on_end = [&answer](const http::StreamOutcome& o) {
      answer.done = true;
      answer.outcome = o;
    };
    client.Start(std::move(request), std::move(cb));
  }
};

Poller::Poller(const std::vector<std::string>& urls, std::string api_key,
               std::chrono::milliseconds timeout)
    : impl_(std::make_unique<Impl>()) {
  impl_->api_key = std::move(api_key);
  impl_->timeout = timeout;
  for (const std::string& u : urls) {
    impl_->urls.push_back(http::ParseUrl(u));
    impl_->url_texts.push_back(u);
    impl_->clients.emplace_back();
    rows_.emplace_back().emplace_back().url = u;
    views_.push_back(rows_.back().back());
  }
}

Poller::~Poller() = default;

void Poller::PollOnce() {
  std::vector<Answer> answers(rows_.size());
  std::vector<bool> started(rows_.size(), false);
  for (size_t i = 0; i < rows_.size(); ++i) {
    http::HttpClient* client = impl_->Client(i, rows_[i]);
    if (client == nullptr) continue;
    impl_->Start(i, *client, answers[i]);
    started[i] = true;
  }
  impl_->io.restart();
  impl_->io.run_for(impl_->timeout + std::chrono::milliseconds(100));
  // Whatever is still open past the deadline ends now (its on_end runs inside CancelAll).
  for (auto& c : impl_->clients) {
    if (c) c->CancelAll();
  }
  impl_->io.restart();
  impl_->io.poll();
  views_.clear();
  for (size_t i = 0; i < rows_.size(); ++i) {
    if (started[i]) Judge(rows_[i], impl_->url_texts[i], answers[i]);
    for (const TargetView& v : rows_[i]) views_.push_back(v);
  }
}

}  // namespace kiln::top
