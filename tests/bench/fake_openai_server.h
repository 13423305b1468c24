// An OpenAI-compatible streaming server for tests, on loopback: plain (blocking) Asio with one
// thread per connection, which is all a few hundred test streams need. It answers
// /v1/completions and /v1/chat/completions with SSE chunks at a configured pace, keeps
// connections alive, and counts what it saw.
#pragma once

#include <sys/socket.h>

#include <atomic>
#include <boost/asio.hpp>
#include <chrono>
#include <cstdio>
#include <list>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

namespace kiln::bench::testing {

struct FakeServerConfig {
  int default_tokens = 8;  // when the request has no max_tokens
  std::chrono::milliseconds ttft{20};
  std::chrono::milliseconds itl{5};
  bool send_usage = true;
  bool space_after_colon = true;  // "data: x" or "data:x"
  int status = 200;               // non-200: a JSON error body instead of a stream
  bool close_after_response = false;
  std::string model = "fake-model";
};

class FakeOpenAiServer {
 public:
  explicit FakeOpenAiServer(FakeServerConfig config = {})
      : config_(std::move(config)),
        acceptor_(io_, {boost::asio::ip::make_address("127.0.0.1"), 0}) {
    port_ = acceptor_.local_endpoint().port();
    accept_thread_ = std::thread([this] { AcceptLoop(); });
  }

  ~FakeOpenAiServer() { Stop(); }

  void Stop() {
    if (stopped_.exchange(true)) return;
    ::shutdown(acceptor_.native_handle(), SHUT_RDWR);  // wakes the blocking accept
    accept_thread_.join();
    std::list<Connection> connections;
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (Connection& c : connections_) ::shutdown(c.socket->native_handle(), SHUT_RDWR);
      connections.swap(connections_);
    }
    for (Connection& c : connections) c.thread.join();
  }

  uint16_t port() const { return port_; }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  int connections_accepted() const { return accepted_.load(); }
  int requests_served() const { return requests_.load(); }
  int peak_streams() const { return peak_.load(); }
  int streams_cut_by_client() const { return cut_.load(); }
  std::string last_body() const {
    std::lock_guard<std::mutex> lock(mu_);
    return last_body_;
  }

 private:
  using tcp = boost::asio::ip::tcp;
  struct Connection {
    std::shared_ptr<tcp::socket> socket;
    std::thread thread;
  };

  void AcceptLoop() {
    while (!stopped_) {
      auto socket = std::make_shared<tcp::socket>(io_);
      boost::system::error_code ec;
      acceptor_.accept(*socket, ec);
      if (ec || stopped_) return;
      ++accepted_;
      std::lock_guard<std::mutex> lock(mu_);
      connections_.push_back({socket, std::thread([this, socket] {
                                Serve(*socket);
                                // FIN to the client; the descriptor is closed by Stop().
                                ::shutdown(socket->native_handle(), SHUT_RDWR);
                              })});
    }
  }

  void Serve(tcp::socket& socket) {
    boost::asio::streambuf buffer;
    boost::system::error_code ec;
    while (!stopped_) {
      const size_t head = boost::asio::read_until(socket, buffer, "\r\n\r\n", ec);
      if (ec) return;
      std::string text(boost::asio::buffers_begin(buffer.data()),
                       boost::asio::buffers_begin(buffer.data()) + head);
      buffer.consume(head);
      const size_t length = ContentLength(text);
      if (buffer.size() < length) {
        boost::asio::read(socket, buffer, boost::asio::transfer_exactly(length - buffer.size()),
                          ec);
        if (ec) return;
      }
      std::string body(boost::asio::buffers_begin(buffer.data()),
                       boost::asio::buffers_begin(buffer.data()) + length);
      buffer.consume(length);
      ++requests_;
      {
        std::lock_guard<std::mutex> lock(mu_);
        last_body_ = body;
      }
      const bool ok = text.rfind("GET /v1/models", 0) == 0 ? Models(socket) : Respond(socket, body);
      if (!ok || config_.close_after_response) return;
    }
  }

  static size_t ContentLength(const std::string& head) {
    std::string lower = head;
    for (char& c : lower) c = static_cast<char>(std::tolower(c));
    const size_t at = lower.find("content-length:");
    return at == std::string::npos ? 0 : std::stoul(lower.substr(at + 15));
  }

  bool Write(tcp::socket& socket, const std::string& data) {
    boost::system::error_code ec;
    boost::asio::write(socket, boost::asio::buffer(data), ec);
    return !ec;
  }

  bool Models(tcp::socket& socket) {
    const std::string body = R"({"object":"list","data":[{"id":")" + config_.model + R"("}]})";
    return Write(socket, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: " +
                             std::to_string(body.size()) + "\r\n\r\n" + body);
  }

  bool Chunk(tcp::socket& socket, const std::string& event) {
    char size[32];
    std::snprintf(size, sizeof size, "%zx\r\n", event.size());
    return Write(socket, size + event + "\r\n");
  }

  bool Respond(tcp::socket& socket, const std::string& request_body) {
    if (config_.status != 200) {
      const std::string body = R"({"error":{"message":"fake overload","type":"overloaded"}})";
      return Write(socket, "HTTP/1.1 " + std::to_string(config_.status) +
                               " Error\r\nContent-Type: application/json\r\nContent-Length: " +
                               std::to_string(body.size()) + "\r\n\r\n" + body);
    }
    nlohmann::json request = nlohmann::json::parse(request_body, nullptr, false);
    int tokens = config_.default_tokens;
    if (request.is_object() && request.contains("max_tokens")) tokens = request["max_tokens"];
    const bool chat = request.is_object() && request.contains("messages");
    if (!Write(socket,
               "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
               "Transfer-Encoding: chunked\r\n\r\n")) {
      return false;
    }
    const int now = ++streams_;
    for (int peak = peak_.load(); now > peak && !peak_.compare_exchange_weak(peak, now);) {
    }
    const bool ok = StreamTokens(socket, tokens, chat);
    --streams_;
    if (!ok) ++cut_;
    return ok;
  }

  bool StreamTokens(tcp::socket& socket, int tokens, bool chat) {
    const std::string prefix = config_.space_after_colon ? "data: " : "data:";
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < tokens; ++i) {
      std::this_thread::sleep_until(start + config_.ttft + config_.itl * i);
      if (stopped_) return false;
      nlohmann::json choice = chat ? nlohmann::json{{"index", 0}, {"delta", {{"content", " tok"}}}}
                                   : nlohmann::json{{"index", 0}, {"text", " tok"}};
      nlohmann::json chunk = {{"id", "x"}, {"choices", {choice}}};
      if (!Chunk(socket, prefix + chunk.dump() + "\n\n")) return false;
    }
    if (config_.send_usage) {
      nlohmann::json usage = {{"id", "x"},
                              {"choices", nlohmann::json::array()},
                              {"usage", {{"prompt_tokens", 11}, {"completion_tokens", tokens}}}};
      if (!Chunk(socket, prefix + usage.dump() + "\n\n")) return false;
    }
    return Chunk(socket, prefix + "[DONE]\n\n") && Write(socket, "0\r\n\r\n");
  }

  FakeServerConfig config_;
  boost::asio::io_context io_;
  tcp::acceptor acceptor_;
  uint16_t port_ = 0;
  std::thread accept_thread_;
  std::atomic<bool> stopped_{false};
  mutable std::mutex mu_;
  std::list<Connection> connections_;
  std::string last_body_;
  std::atomic<int> accepted_{0}, requests_{0}, streams_{0}, peak_{0}, cut_{0};
};

}  // namespace kiln::bench::testing
