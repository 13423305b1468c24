// A stand-in OTLP/HTTP collector for the exporter tests: a blocking socket server on
// 127.0.0.1 (one thread per connection, keep-alive) that records each request and answers as
// told: 200, 500, garbage, or never.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace kiln::telemetry::testing {

class FakeCollector {
 public:
  enum class Mode { kOk, kServerError, kGarbage, kHang };

  struct Request {
    std::string head;  // request line and fields
    std::string body;
  };

  explicit FakeCollector(Mode mode) : mode_(mode) {
    listen_fd_ = socket(AF_INET, SOCK_STREAM, 0);
    const int one = 1;
    setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
        listen(listen_fd_, 16) != 0) {
      std::abort();
    }
    socklen_t len = sizeof(addr);
    getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    accept_thread_ = std::thread([this] { AcceptLoop(); });
  }

  ~FakeCollector() {
    stop_ = true;
    accept_thread_.join();
    for (std::thread& t : connection_threads_) t.join();
    close(listen_fd_);
  }

  int port() const { return port_; }
  std::string endpoint() const { return "http://127.0.0.1:" + std::to_string(port_); }

  // Waits until `n` requests have arrived (or `timeout`); the requests so far.
  std::vector<Request> WaitFor(size_t n, std::chrono::milliseconds timeout) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait_for(lock, timeout, [&] { return requests_.size() >= n; });
    return requests_;
  }

 private:
  void AcceptLoop() {
    while (!stop_) {
      pollfd p{listen_fd_, POLLIN, 0};
      if (poll(&p, 1, 20) <= 0) continue;
      const int fd = accept(listen_fd_, nullptr, nullptr);
      if (fd < 0) continue;
      connection_threads_.emplace_back([this, fd] { Serve(fd); });
    }
  }

  // Reads into `buf` until it holds `n` bytes or the peer closes; false on close or stop.
  bool ReadUntil(int fd, std::string& buf, size_t n) {
    char chunk[4096];
    while (buf.size() < n) {
      pollfd p{fd, POLLIN, 0};
      if (stop_) return false;
      if (poll(&p, 1, 20) <= 0) continue;
      const ssize_t got = read(fd, chunk, sizeof(chunk));
      if (got <= 0) return false;
      buf.append(chunk, static_cast<size_t>(got));
    }
    return true;
  }

  void Serve(int fd) {
    std::string buf;
    for (;;) {
      size_t end;
      while ((end = buf.find("\r\n\r\n")) == std::string::npos) {
        if (!ReadUntil(fd, buf, buf.size() + 1)) return Close(fd);
      }
      Request r;
      r.head = buf.substr(0, end);
      size_t length = 0;
      const size_t cl = r.head.find("Content-Length: ");
      if (cl != std::string::npos) length = std::stoul(r.head.substr(cl + 16));
      if (!ReadUntil(fd, buf, end + 4 + length)) return Close(fd);
      r.body = buf.substr(end + 4, length);
      buf.erase(0, end + 4 + length);
      {
        std::lock_guard<std::mutex> lock(mu_);
        requests_.push_back(std::move(r));
      }
      cv_.notify_all();
      if (!Answer(fd)) return Close(fd);
    }
  }

  // False when the connection should end.
  bool Answer(int fd) {
    std::string reply;
    switch (mode_) {
      case Mode::kOk:
        reply =
            "HTTP/1.1 200 OK\r\nContent-Type: application/x-protobuf\r\n"
            "Content-Length: 0\r\n\r\n";
        break;
      case Mode::kServerError:
        reply = "HTTP/1.1 500 Internal Server Error\r\nContent-Length: 4\r\n\r\noops";
        break;
      case Mode::kGarbage:
        reply = "\x01\x02 not http at all\r\n\r\n";
        break;
      case Mode::kHang:
        while (!stop_) std::this_thread::sleep_for(std::chrono::milliseconds(10));
        return false;
    }
    const bool sent = write(fd, reply.data(), reply.size()) == static_cast<ssize_t>(reply.size());
    return sent && mode_ != Mode::kGarbage;
  }

  void Close(int fd) { close(fd); }

  const Mode mode_;
  int listen_fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::thread accept_thread_;
  std::vector<std::thread> connection_threads_;  // only the accept thread adds
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Request> requests_;
};

}  // namespace kiln::telemetry::testing
