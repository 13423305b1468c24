// A Server on a loopback port in front of FakeEngine and ByteTokenizer, and a small blocking
// HTTP client that returns status, headers and (de-chunked) body.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "http/raw_client.h"
#include "server/fakes.h"
#include "server/server.h"

namespace kiln::testing {

struct HttpResult {
  int status = 0;
  std::string head;  // status line and headers
  std::string body;  // de-chunked
  nlohmann::json Json() const { return nlohmann::json::parse(body); }
  bool HasHeader(const std::string& line) const { return head.find(line) != std::string::npos; }
};

// Reads one whole response from `c` (Content-Length or chunked).
inline HttpResult ReadResponse(
    RawClient& c, std::chrono::milliseconds timeout = std::chrono::milliseconds(10000)) {
  HttpResult r;
  if (!c.ReadUntil("\r\n\r\n", timeout)) return r;
  std::string raw = c.received();
  size_t head_end = raw.find("\r\n\r\n");
  r.head = raw.substr(0, head_end);
  r.status = std::stoi(r.head.substr(9, 3));
  if (r.head.find("Transfer-Encoding: chunked") != std::string::npos) {
    c.ReadUntil("\r\n0\r\n\r\n", timeout);
    r.body = Dechunk(c.received().substr(head_end + 4));
  } else {
    size_t cl = r.head.find("Content-Length: ");
    size_t length = cl == std::string::npos ? 0 : std::stoul(r.head.substr(cl + 16));
    c.ReadAtLeast(head_end + 4 + length, timeout);
    r.body = c.received().substr(head_end + 4, length);
  }
  c.Take();
  return r;
}

class ServerTest : public ::testing::Test {
 protected:
  // Starts the server; call from the test body after adjusting config_.
  void StartServer() {
    config_.http.port = 0;
    config_.model_id = "test-model";
    server_ = std::make_unique<Server>(config_, engine_, &tokenizer_, chat_template_);
    server_->Start();
  }
  void TearDown() override {
    if (server_) server_->Stop();
  }
  uint16_t port() const { return server_->port(); }

  HttpResult Post(const std::string& path, const std::string& body,
                  const std::string& headers = "") {
    RawClient c(port());
    c.Send(PostRequest(path, body, headers));
    return ReadResponse(c);
  }
  HttpResult Get(const std::string& path, const std::string& headers = "") {
    RawClient c(port());
    c.Send(GetRequest(path, headers));
    return ReadResponse(c);
  }
  // The JSON payloads of the `data: ` frames of an SSE body, in order ("[DONE]" kept as is).
  static std::vector<std::string> SseData(const std::string& body) {
    std::vector<std::string> out;
    size_t pos = 0;
    while ((pos = body.find("data: ", pos)) != std::string::npos) {
      size_t end = body.find("\n\n", pos);
      out.push_back(body.substr(pos + 6, end - pos - 6));
      pos = end;
    }
    return out;
  }

  ServerConfig config_;
  FakeEngine engine_;
  ByteTokenizer tokenizer_;
  ChatTemplateFn chat_template_;
  std::unique_ptr<Server> server_;
};

}  // namespace kiln::testing
