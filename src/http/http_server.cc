#include "http/http_server.h"

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <chrono>
#include <future>
#include <thread>
#include <vector>

#include "http/connection.h"
#include "http/server_shared.h"
#include "util/error.h"
#include "util/log.h"

namespace kiln::http {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;

class HttpServer::Impl {
 public:
  Impl(ServerOptions options, Handler handler) : shared_(std::make_shared<ServerShared>()) {
    shared_->options = std::move(options);
    shared_->handler = std::move(handler);
  }

  ~Impl() {
    Stop();
    // No Exchange call may hold a connection past this point (exchange_gate.h); connections
    // still registered go now, while the io_context their sockets and timers need is alive.
    shared_->gate->Close();
    std::unordered_map<Connection*, std::shared_ptr<Connection>> left;
    {
      std::lock_guard<std::mutex> lock(shared_->mu);
      left.swap(shared_->live);
    }
  }

  void Start() {
    const ServerOptions& o = shared_->options;
    boost::system::error_code ec;
    asio::ip::address address = asio::ip::make_address(o.host, ec);
    KILN_CHECK(!ec, "--hostname: '", o.host, "' is not an IP address");
    tcp::endpoint endpoint(address, o.port);
    acceptor_.open(endpoint.protocol(), ec);
    if (!ec) acceptor_.set_option(asio::socket_base::reuse_address(true), ec);
    if (!ec) acceptor_.bind(endpoint, ec);
    if (!ec) acceptor_.listen(asio::socket_base::max_listen_connections, ec);
    KILN_CHECK(!ec, "cannot listen on ", o.host, ":", o.port, ": ", ec.message());
    port_ = acceptor_.local_endpoint().port();
    Accept();
    const int n = std::max(1, o.io_threads);
    for (int i = 0; i < n; ++i) threads_.emplace_back([this] { ioc_.run(); });
  }

  void Stop() {
    if (stopped_.exchange(true)) return;
    shared_->stopping = true;
    CloseAcceptor();
    // Every accept handler ran before the close (its connection is registered) or sees the
    // acceptor closed after it, so this snapshot holds every connection there will be.
    std::vector<std::shared_ptr<Connection>> live;
    {
      std::lock_guard<std::mutex> lock(shared_->mu);
      for (auto& [ptr, conn] : shared_->live) live.push_back(conn);
    }
    for (auto& c : live) c->Close();
    live.clear();
    // Give the closes a moment to run their callbacks (request cancellation), then stop.
    for (int i = 0; i < 100 && shared_->Count() > 0; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    work_.reset();
    ioc_.stop();
    for (auto& t : threads_) {
      if (t.joinable()) t.join();
    }
    threads_.clear();
  }

  uint16_t port() const { return port_; }
  size_t connection_count() const { return shared_->Count(); }

 private:
  // Closes the acceptor on its strand and waits for that, so no accept completes afterwards.
  void CloseAcceptor() {
    auto close = [this] {
      boost::system::error_code ignored;
      acceptor_.close(ignored);
      retry_timer_.cancel();
    };
    if (threads_.empty()) return close();  // never started: nothing runs the strand
    std::promise<void> closed;
    asio::post(accept_strand_, [&] {
      close();
      closed.set_value();
    });
    closed.get_future().wait();
  }

  void Accept() {
    acceptor_.async_accept(
        asio::make_strand(ioc_), [this](boost::system::error_code ec, tcp::socket socket) {
          if (ec == asio::error::operation_aborted || !acceptor_.is_open()) return;
          if (ec) {
            // Out of descriptors or memory: wait a little rather than spin.
            log::Warn("http: accept failed: " + ec.message());
            retry_timer_.expires_after(std::chrono::milliseconds(50));
            retry_timer_.async_wait([this](boost::system::error_code wec) {
              if (!wec) Accept();
            });
            return;
          }
          auto connection = std::make_shared<Connection>(std::move(socket), shared_);
          shared_->Register(connection);
          connection->Start();
          Accept();
        });
  }

  std::shared_ptr<ServerShared> shared_;
  asio::io_context ioc_;
  asio::executor_work_guard<asio::io_context::executor_type> work_{ioc_.get_executor()};
  asio::strand<asio::io_context::executor_type> accept_strand_{asio::make_strand(ioc_)};
  tcp::acceptor acceptor_{accept_strand_};
  asio::steady_timer retry_timer_{accept_strand_};
  std::vector<std::thread> threads_;
  std::atomic<bool> stopped_{false};
  uint16_t port_ = 0;
};

HttpServer::HttpServer(ServerOptions options, Handler handler)
    : impl_(std::make_unique<Impl>(std::move(options), std::move(handler))) {}

HttpServer::~HttpServer() = default;

void HttpServer::Start() { impl_->Start(); }
uint16_t HttpServer::port() const { return impl_->port(); }
void HttpServer::Stop() { impl_->Stop(); }
size_t HttpServer::connection_count() const { return impl_->connection_count(); }

}  // namespace kiln::http
