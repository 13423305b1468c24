// A blocking loopback client over plain POSIX sockets, to see exactly the bytes the server
// sends (status lines, chunk framing, SSE frames) in the http and server tests.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

namespace kiln::testing {

class RawClient {
 public:
  explicit RawClient(uint16_t port) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) Close();
  }
  ~RawClient() { Close(); }
  RawClient(const RawClient&) = delete;
  RawClient& operator=(const RawClient&) = delete;

  bool connected() const { return fd_ >= 0; }

  bool Send(std::string_view data) {
    while (!data.empty()) {
      ssize_t n = ::send(fd_, data.data(), data.size(), MSG_NOSIGNAL);
      if (n <= 0) return false;
      data.remove_prefix(static_cast<size_t>(n));
    }
    return true;
  }

  // Reads until `needle` is in the received bytes, the peer closes, or `timeout` passes.
  // Returns whether the needle was seen.
  bool ReadUntil(std::string_view needle,
                 std::chrono::milliseconds timeout = std::chrono::milliseconds(5000)) {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    while (received_.find(needle, scan_from_) == std::string::npos) {
      if (!ReadSome(deadline)) return false;
    }
    return true;
  }

  // Reads until at least `n` bytes are in (true) or `timeout` passes.
  bool ReadAtLeast(size_t n, std::chrono::milliseconds timeout = std::chrono::milliseconds(5000)) {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    while (received_.size() < n) {
      if (!ReadSome(deadline)) return received_.size() >= n;
    }
    return true;
  }

  // Reads until the peer closes (true) or `timeout` passes (false).
  bool ReadToClose(std::chrono::milliseconds timeout = std::chrono::milliseconds(5000)) {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    while (true) {
      if (eof_) return true;
      if (!ReadSome(deadline)) return eof_;
    }
  }

  // Everything received since the last Take().
  std::string Take() {
    std::string out = std::move(received_);
    received_.clear();
    scan_from_ = 0;
    return out;
  }
  const std::string& received() const { return received_; }
  bool eof() const { return eof_; }

  void Close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }
  // Closes with a reset (SO_LINGER 0), as a killed client does.
  void Reset() {
    if (fd_ < 0) return;
    linger l{1, 0};
    ::setsockopt(fd_, SOL_SOCKET, SO_LINGER, &l, sizeof(l));
    Close();
  }

 private:
  bool ReadSome(std::chrono::steady_clock::time_point deadline) {
    if (fd_ < 0 || eof_) return false;
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return false;
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) return false;
    char buf[65536];
    ssize_t n = ::recv(fd_, buf, sizeof(buf), 0);
    if (n <= 0) {
      eof_ = true;
      return false;
    }
    received_.append(buf, static_cast<size_t>(n));
    return true;
  }

  int fd_ = -1;
  std::string received_;
  size_t scan_from_ = 0;
  bool eof_ = false;
};

// "POST /path HTTP/1.1" with Host, Content-Length and the body.
inline std::string PostRequest(std::string_view path, std::string_view body,
                               std::string_view extra_headers = "") {
  std::string r = "POST " + std::string(path) + " HTTP/1.1\r\nHost: x\r\n";
  r += "Content-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) + "\r\n";
  r += std::string(extra_headers) + "\r\n";
  r += body;
  return r;
}

inline std::string GetRequest(std::string_view path, std::string_view extra_headers = "") {
  return "GET " + std::string(path) + " HTTP/1.1\r\nHost: x\r\n" + std::string(extra_headers) +
         "\r\n";
}

// Decodes a chunked body (the bytes after the header); stops at the last chunk or at
// incomplete input.
inline std::string Dechunk(std::string_view body) {
  std::string out;
  while (true) {
    size_t eol = body.find("\r\n");
    if (eol == std::string_view::npos) break;
    size_t size = std::stoul(std::string(body.substr(0, eol)), nullptr, 16);
    if (size == 0 || body.size() < eol + 2 + size + 2) break;
    out.append(body.substr(eol + 2, size));
    body.remove_prefix(eol + 2 + size + 2);
  }
  return out;
}

// The body of a response in `raw` (after the blank line).
inline std::string BodyOf(const std::string& raw) {
  size_t p = raw.find("\r\n\r\n");
  return p == std::string::npos ? "" : raw.substr(p + 4);
}

}  // namespace kiln::testing
