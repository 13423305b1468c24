#include "http/client/http_client.h"

#include <sys/resource.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <cctype>
#include <limits>
#include <optional>
#include <unordered_map>

#include "util/error.h"

namespace kiln::http {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
using tcp = asio::ip::tcp;

namespace {

struct ClientConnection {
  explicit ClientConnection(asio::io_context& io) : stream(io) {}
  beast::tcp_stream stream;
  beast::flat_buffer buffer;
};

class ClientExchange;

}  // namespace

class HttpClient::Impl : public std::enable_shared_from_this<HttpClient::Impl> {
 public:
  Impl(asio::io_context& io_context, const Url& base_url, ClientOptions client_options)
      : io(io_context), base(base_url), options(client_options) {
    tcp::resolver resolver(io);
    beast::error_code ec;
    endpoints = resolver.resolve(base.host, std::to_string(base.port), ec);
    KILN_CHECK(!ec && !endpoints.empty(), "cannot resolve '", base.host, "': ", ec.message());
  }

  uint64_t Start(ClientRequest request, StreamCallbacks callbacks);
  void Cancel(uint64_t id);
  void CancelAll();

  asio::io_context& io;
  Url base;
  ClientOptions options;
  tcp::resolver::results_type endpoints;
  std::unordered_map<uint64_t, std::shared_ptr<ClientExchange>> active;
  std::vector<std::unique_ptr<ClientConnection>> idle;
  uint64_t next_id = 1;
  uint64_t opened = 0;
};

namespace {

// One request/response on one connection. Handlers hold a shared_ptr to it, so it outlives a
// Cancel() until the aborted operations have returned.
class ClientExchange : public std::enable_shared_from_this<ClientExchange> {
 public:
  ClientExchange(std::shared_ptr<HttpClient::Impl> client, uint64_t id, ClientRequest request,
                 StreamCallbacks callbacks)
      : client_(std::move(client)), id_(id), cb_(std::move(callbacks)) {
    buf_.resize(std::max<size_t>(client_->options.read_buffer_bytes, 512));
    request_.method_string(request.method);
    request_.target(request.target);
    request_.version(11);
    request_.set(bhttp::field::host, client_->base.HostHeader());
    request_.set(bhttp::field::user_agent, client_->options.user_agent);
    for (const auto& [name, value] : request.headers) request_.set(name, value);
    request_.body() = std::move(request.body);
    request_.keep_alive(true);
    request_.prepare_payload();
  }

  void Begin() {
    if (client_->idle.empty()) return Connect();
    conn_ = std::move(client_->idle.back());
    client_->idle.pop_back();
    reused_ = true;
    Write();
  }

  void Cancel() {
    CloseSocket();
    End(StreamEnd::kCancelled, "");
  }

 private:
  template <typename F>
  auto Bind(F f) {
    return
        [self = shared_from_this(), f](beast::error_code ec, auto&&...) { (self.get()->*f)(ec); };
  }

  void Connect() {
    conn_ = std::make_unique<ClientConnection>(client_->io);
    ++client_->opened;
    conn_->stream.expires_after(client_->options.connect_timeout);
    conn_->stream.async_connect(client_->endpoints, Bind(&ClientExchange::OnConnect));
  }

  void OnConnect(beast::error_code ec) {
    if (done_) return;
    if (ec) return Fail("connect to " + client_->base.HostHeader(), ec);
    beast::error_code ignored;
    conn_->stream.socket().set_option(tcp::no_delay(true), ignored);  // small requests: no Nagle
    Write();
  }

  void Write() {
    conn_->stream.expires_after(client_->options.idle_timeout);
    bhttp::async_write(conn_->stream, request_, Bind(&ClientExchange::OnWrite));
  }

  void OnWrite(beast::error_code ec) {
    if (done_) return;
    if (ec) return RetryOnFresh(ec) ? void() : Fail("send request", ec);
    parser_.emplace();
    parser_->body_limit(std::numeric_limits<std::uint64_t>::max());
    conn_->stream.expires_after(client_->options.idle_timeout);
    bhttp::async_read_header(conn_->stream, conn_->buffer, *parser_,
                             Bind(&ClientExchange::OnHeader));
  }

  void OnHeader(beast::error_code ec) {
    if (done_) return;
    if (ec) return RetryOnFresh(ec) ? void() : Fail("read response head", ec);
    status_ = parser_->get().result_int();
    const Clock::time_point now = Clock::now();
    if (cb_.on_head) {
      cb_.on_head(Head(), now);
      if (done_) return;
    }
    if (cb_.on_headers) cb_.on_headers(status_, now);
    if (done_) return;  // cancelled from the callback
    if (parser_->is_done()) return End(StreamEnd::kComplete, "");
    ReadBody();
  }

  ReceivedHead Head() const {
    ReceivedHead head;
    head.status = status_;
    for (const auto& field : parser_->get()) {
      std::string name(field.name_string());
      for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      head.headers.emplace_back(std::move(name), std::string(field.value()));
    }
    head.has_length = parser_->content_length().has_value();
    return head;
  }

  void ReadBody() {
    parser_->get().body().data = buf_.data();
    parser_->get().body().size = buf_.size();
    conn_->stream.expires_after(client_->options.idle_timeout);
    bhttp::async_read_some(conn_->stream, conn_->buffer, *parser_, Bind(&ClientExchange::OnBody));
  }

  void OnBody(beast::error_code ec) {
    const Clock::time_point now = Clock::now();  // as close to byte arrival as user space gets
    if (done_) return;
    if (ec == bhttp::error::need_buffer) ec = {};
    const size_t got = buf_.size() - parser_->get().body().size;
    if (got > 0 && cb_.on_body) cb_.on_body(std::string_view(buf_.data(), got), now);
    if (done_) return;
    if (parser_->is_done()) return End(StreamEnd::kComplete, "");
    if (ec) return Fail("read response body", ec);
    ReadBody();
  }

  // A keep-alive connection the server closed while idle fails on first use: send once more on
  // a fresh connection, as long as nothing of a response arrived.
  bool RetryOnFresh(beast::error_code ec) {
    if (!reused_ || retried_ || status_ != 0 || ec == beast::error::timeout) return false;
    retried_ = true;
    reused_ = false;
    conn_.reset();  // no operation is pending on it: we are in its completion handler
    parser_.reset();
    Connect();
    return true;
  }

  void Fail(const std::string& what, beast::error_code ec) {
    const std::string why = ec == beast::error::timeout ? "timed out" : ec.message();
    End(StreamEnd::kError, what + ": " + why);
  }

  void CloseSocket() {
    if (!conn_) return;
    beast::error_code ignored;
    conn_->stream.socket().shutdown(tcp::socket::shutdown_both, ignored);
    conn_->stream.socket().close(ignored);
  }

  void End(StreamEnd end, std::string error) {
    if (done_) return;
    done_ = true;
    StreamOutcome outcome{end, status_, std::move(error), Clock::now(), reused_};
    const bool reusable = end == StreamEnd::kComplete && conn_ && parser_ && parser_->is_done() &&
                          parser_->keep_alive();
    if (reusable) {
      conn_->stream.expires_never();
      client_->idle.push_back(std::move(conn_));
    } else {
      CloseSocket();
    }
    auto self = shared_from_this();  // the map entry goes now; callbacks may start new requests
    client_->active.erase(id_);
    if (cb_.on_end) cb_.on_end(outcome);
  }

  std::shared_ptr<HttpClient::Impl> client_;
  uint64_t id_;
  StreamCallbacks cb_;
  bhttp::request<bhttp::string_body> request_;
  std::unique_ptr<ClientConnection> conn_;
  std::optional<bhttp::response_parser<bhttp::buffer_body>> parser_;
  std::vector<char> buf_;
  int status_ = 0;
  bool reused_ = false;
  bool retried_ = false;
  bool done_ = false;
};

}  // namespace

uint64_t HttpClient::Impl::Start(ClientRequest request, StreamCallbacks callbacks) {
  const uint64_t id = next_id++;
  auto exchange = std::make_shared<ClientExchange>(shared_from_this(), id, std::move(request),
                                                   std::move(callbacks));
  active.emplace(id, exchange);
  exchange->Begin();
  return id;
}

void HttpClient::Impl::Cancel(uint64_t id) {
  auto it = active.find(id);
  if (it == active.end()) return;
  std::shared_ptr<ClientExchange> exchange = it->second;
  exchange->Cancel();
}

void HttpClient::Impl::CancelAll() {
  std::vector<uint64_t> ids;
  ids.reserve(active.size());
  for (const auto& entry : active) ids.push_back(entry.first);
  for (uint64_t id : ids) Cancel(id);
}

HttpClient::HttpClient(asio::io_context& io, const Url& base, ClientOptions options)
    : impl_(std::make_shared<Impl>(io, base, options)) {}

HttpClient::~HttpClient() {
  impl_->CancelAll();
  impl_->idle.clear();
}

uint64_t HttpClient::Start(ClientRequest request, StreamCallbacks callbacks) {
  return impl_->Start(std::move(request), std::move(callbacks));
}
void HttpClient::Cancel(uint64_t id) { impl_->Cancel(id); }
void HttpClient::CancelAll() { impl_->CancelAll(); }
size_t HttpClient::active() const { return impl_->active.size(); }
size_t HttpClient::idle_connections() const { return impl_->idle.size(); }
uint64_t HttpClient::connections_opened() const { return impl_->opened; }

uint64_t RaiseOpenFileLimit() {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0) return 0;
  if (limit.rlim_cur < limit.rlim_max) {
    limit.rlim_cur = limit.rlim_max;
    setrlimit(RLIMIT_NOFILE, &limit);
    getrlimit(RLIMIT_NOFILE, &limit);
  }
  return limit.rlim_cur;
}

}  // namespace kiln::http
