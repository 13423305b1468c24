#include "http/http_server.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <fstream>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "http/raw_client.h"

namespace kiln::http {
namespace {

using namespace std::chrono_literals;
using testing::BodyOf;
using testing::Dechunk;
using testing::GetRequest;
using testing::PostRequest;
using testing::RawClient;

// A test server whose handler the test sets; exchanges it keeps are reachable by tests.
class HttpServerTest : public ::testing::Test {
 protected:
  void Start(ServerOptions options = {}) {
    options.port = 0;
    options.io_threads = 2;
    if (!options.error_response) {
      options.error_response = [](int status, const std::string& message) {
        Response r;
        r.status = status;
        r.body = "{\"error\":\"" + message + "\"}";
        return r;
      };
    }
    server_ = std::make_unique<HttpServer>(
        options, [this](Request req, auto ex) { handler_(std::move(req), std::move(ex)); });
    server_->Start();
  }
  void TearDown() override {
    if (server_) server_->Stop();
  }
  uint16_t port() const { return server_->port(); }

  // Handler: echo the method, path and body.
  static void Echo(Request req, std::shared_ptr<Exchange> ex) {
    Response r;
    r.content_type = "text/plain";
    r.body = req.method + " " + req.path + " " + req.body;
    ex->Respond(std::move(r));
  }

  // Sends GET /s from `c`; the handler starts an event stream and hands its Exchange back.
  std::shared_ptr<Exchange> OpenEventStream(RawClient& c) {
    auto got = std::make_shared<std::promise<std::shared_ptr<Exchange>>>();
    handler_ = [got](Request, std::shared_ptr<Exchange> ex) {
      ex->StartStream(200, "text/event-stream", {});
      got->set_value(ex);
    };
    EXPECT_TRUE(c.Send(GetRequest("/s")));
    return got->get_future().get();
  }

  std::function<void(Request, std::shared_ptr<Exchange>)> handler_ = Echo;
  std::unique_ptr<HttpServer> server_;
};

// Waits up to `timeout` for `pred`.
template <typename Pred>
bool WaitFor(Pred pred, std::chrono::milliseconds timeout = 3000ms) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!pred()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(2ms);
  }
  return true;
}

TEST_F(HttpServerTest, KeepAliveServesSeveralRequestsOnOneConnection) {
  Start();
  RawClient c(port());
  ASSERT_TRUE(c.connected());
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(c.Send(PostRequest("/echo", "body" + std::to_string(i))));
    std::string expect = "POST /echo body" + std::to_string(i);
    ASSERT_TRUE(c.ReadUntil(expect)) << c.received();
    std::string raw = c.Take();
    EXPECT_EQ(raw.rfind("HTTP/1.1 200 OK\r\n", 0), 0u);
    EXPECT_NE(raw.find("Connection: keep-alive"), std::string::npos);
    EXPECT_NE(raw.find("Content-Length: " + std::to_string(expect.size())), std::string::npos);
  }
  EXPECT_EQ(server_->connection_count(), 1u);
}

TEST_F(HttpServerTest, PipelinedRequestsAreAnsweredInOrder) {
  Start();
  RawClient c(port());
  ASSERT_TRUE(c.Send(PostRequest("/a", "1") + PostRequest("/b", "2") + GetRequest("/c")));
  ASSERT_TRUE(c.ReadUntil("GET /c "));
  const std::string& all = c.received();
  EXPECT_LT(all.find("POST /a 1"), all.find("POST /b 2"));
}

TEST_F(HttpServerTest, ConnectionCloseIsHonoured) {
  Start();
  RawClient c(port());
  ASSERT_TRUE(c.Send(GetRequest("/x", "Connection: close\r\n")));
  ASSERT_TRUE(c.ReadToClose());
  EXPECT_NE(c.received().find("Connection: close"), std::string::npos);
  EXPECT_NE(c.received().find("GET /x "), std::string::npos);
}

TEST_F(HttpServerTest, Http10WithoutKeepAliveCloses) {
  Start();
  RawClient c(port());
  ASSERT_TRUE(c.Send("GET /old HTTP/1.0\r\n\r\n"));
  ASSERT_TRUE(c.ReadToClose());
  EXPECT_NE(c.received().find("GET /old "), std::string::npos);
}

TEST_F(HttpServerTest, PayloadAtLimitPassesAndOneByteMoreIs413) {
  ServerOptions o;
  o.max_body_bytes = 1000;
  Start(o);
  {
    RawClient c(port());
    ASSERT_TRUE(c.Send(PostRequest("/p", std::string(1000, 'a'))));
    ASSERT_TRUE(c.ReadUntil(std::string(1000, 'a')));
    EXPECT_EQ(c.received().rfind("HTTP/1.1 200", 0), 0u);
  }
  {
    RawClient c(port());
    ASSERT_TRUE(c.Send(PostRequest("/p", std::string(1001, 'a'))));
    ASSERT_TRUE(c.ReadToClose());
    EXPECT_EQ(c.received().rfind("HTTP/1.1 413 Payload Too Large\r\n", 0), 0u) << c.received();
    EXPECT_NE(c.received().find("exceeds the limit of 1000 bytes"), std::string::npos);
  }
}

TEST_F(HttpServerTest, ChunkedBodyOverTheLimitIs413) {
  ServerOptions o;
  o.max_body_bytes = 100;
  Start(o);
  RawClient c(port());
  std::string req = "POST /p HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n";
  req += "64\r\n" + std::string(100, 'a') + "\r\n1\r\nb\r\n0\r\n\r\n";
  ASSERT_TRUE(c.Send(req));
  ASSERT_TRUE(c.ReadToClose());
  EXPECT_EQ(c.received().rfind("HTTP/1.1 413", 0), 0u) << c.received();
}

TEST_F(HttpServerTest, HugeDeclaredBodyIsRefusedBeforeItIsSent) {
  Start();  // 2,000,000 bytes
  RawClient c(port());
  ASSERT_TRUE(c.Send("POST /p HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999999\r\n\r\n"));
  ASSERT_TRUE(c.ReadUntil("\r\n\r\n"));
  EXPECT_EQ(c.received().rfind("HTTP/1.1 413", 0), 0u);
}

TEST_F(HttpServerTest, HeaderLimits) {
  ServerOptions o;
  o.max_header_bytes = 2048;
  o.max_header_count = 10;
  Start(o);
  {
    RawClient c(port());
    ASSERT_TRUE(c.Send(GetRequest("/h", "X-Big: " + std::string(4000, 'a') + "\r\n")));
    ASSERT_TRUE(c.ReadToClose());
    EXPECT_EQ(c.received().rfind("HTTP/1.1 431", 0), 0u) << c.received();
  }
  {
    std::string many;
    for (int i = 0; i < 10; ++i) many += "X-" + std::to_string(i) + ": v\r\n";
    RawClient c(port());
    ASSERT_TRUE(c.Send(GetRequest("/h", many)));  // Host + 10 = 11 fields
    ASSERT_TRUE(c.ReadToClose());
    EXPECT_EQ(c.received().rfind("HTTP/1.1 431", 0), 0u) << c.received();
  }
  {
    std::string nine;
    for (int i = 0; i < 9; ++i) nine += "X-" + std::to_string(i) + ": v\r\n";
    RawClient c(port());
    ASSERT_TRUE(c.Send(GetRequest("/h", nine)));  // exactly 10
    ASSERT_TRUE(c.ReadUntil("GET /h "));
  }
}

TEST_F(HttpServerTest, GarbageIs400) {
  Start();
  for (const char* junk : {"HELLO\r\n\r\n", "GET / HTTP/9.9\r\n\r\n", "GET /\x01 HTTP/1.1\r\n\r\n",
                           "POST / HTTP/1.1\r\nContent-Length: -5\r\n\r\n",
                           "POST / HTTP/1.1\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n"}) {
    RawClient c(port());
    ASSERT_TRUE(c.Send(junk));
    ASSERT_TRUE(c.ReadToClose()) << junk;
    EXPECT_EQ(c.received().rfind("HTTP/1.1 400", 0), 0u) << junk << " -> " << c.received();
  }
}

TEST_F(HttpServerTest, ExpectContinue) {
  Start();
  RawClient c(port());
  ASSERT_TRUE(
      c.Send("POST /e HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nExpect: 100-continue\r\n\r\n"));
  ASSERT_TRUE(c.ReadUntil("100 Continue\r\n\r\n"));
  ASSERT_TRUE(c.Send("abc"));
  ASSERT_TRUE(c.ReadUntil("POST /e abc"));
}

TEST_F(HttpServerTest, HeadOmitsTheBody) {
  Start();
  RawClient c(port());
  ASSERT_TRUE(c.Send("HEAD /h HTTP/1.1\r\nHost: x\r\n\r\n" + GetRequest("/after")));
  ASSERT_TRUE(c.ReadUntil("GET /after "));
  EXPECT_EQ(c.received().find("HEAD /h"), std::string::npos);
}

TEST_F(HttpServerTest, IdleConnectionsAreClosed) {
  ServerOptions o;
  o.idle_timeout = 100ms;
  o.read_timeout = 100ms;
  Start(o);
  RawClient idle(port());
  ASSERT_TRUE(idle.ReadToClose(2000ms));
  RawClient slow(port());
  ASSERT_TRUE(slow.Send("POST /p HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\nabc"));
  ASSERT_TRUE(slow.ReadToClose(2000ms));  // the body never completes
  EXPECT_TRUE(WaitFor([&] { return server_->connection_count() == 0; }));
}

TEST_F(HttpServerTest, HandlerExceptionIs500AndDroppedExchangeIs500) {
  Start();
  handler_ = [](Request req, std::shared_ptr<Exchange>) {
    if (req.path == "/throw") throw std::runtime_error("bug");
    // else: drop the exchange without answering
  };
  RawClient c(port());
  ASSERT_TRUE(c.Send(GetRequest("/throw")));
  ASSERT_TRUE(c.ReadUntil("\r\n\r\n"));
  EXPECT_EQ(c.Take().rfind("HTTP/1.1 500", 0), 0u);
  ASSERT_TRUE(c.Send(GetRequest("/drop")));
  ASSERT_TRUE(c.ReadUntil("dropped without a response"));
  EXPECT_EQ(c.received().rfind("HTTP/1.1 500", 0), 0u);
}

TEST_F(HttpServerTest, LateResponseFromAnotherThread) {
  Start();
  std::thread worker;
  handler_ = [&worker](Request, std::shared_ptr<Exchange> ex) {
    worker = std::thread([ex] {
      std::this_thread::sleep_for(50ms);
      Response r;
      r.body = "late";
      ex->Respond(std::move(r));
    });
  };
  RawClient c(port());
  ASSERT_TRUE(c.Send(GetRequest("/slow")));
  EXPECT_TRUE(c.ReadUntil("late"));
  worker.join();
}

// Streams events written by a producer thread, as the engine does.
TEST_F(HttpServerTest, SseStreamFromAnotherThread) {
  Start();
  std::thread producer;
  handler_ = [&producer](Request, std::shared_ptr<Exchange> ex) {
    ex->StartStream(200, "text/event-stream", {{"Cache-Control", "no-cache"}});
    producer = std::thread([ex] {
      for (int i = 0; i < 50; ++i) ex->Write("data: " + std::to_string(i) + "\n\n");
      ex->End();
    });
  };
  RawClient c(port());
  ASSERT_TRUE(c.Send(GetRequest("/s")));
  ASSERT_TRUE(c.ReadUntil("\r\n0\r\n\r\n"));
  producer.join();
  std::string raw = c.Take();
  EXPECT_NE(raw.find("Transfer-Encoding: chunked"), std::string::npos);
  EXPECT_NE(raw.find("Content-Type: text/event-stream"), std::string::npos);
  std::string body = Dechunk(BodyOf(raw));
  std::string expect;
  for (int i = 0; i < 50; ++i) expect += "data: " + std::to_string(i) + "\n\n";
  EXPECT_EQ(body, expect);
  // The connection is reusable after the stream.
  ASSERT_TRUE(c.Send(GetRequest("/s")));
  ASSERT_TRUE(c.ReadUntil("\r\n0\r\n\r\n"));
  producer.join();
}

TEST_F(HttpServerTest, IdleSseStreamsGetKeepAliveComments) {
  ServerOptions o;
  o.sse_keep_alive = 50ms;
  Start(o);
  std::shared_ptr<Exchange> held;
  std::mutex mu;
  handler_ = [&](Request, std::shared_ptr<Exchange> ex) {
    ex->StartStream(200, "text/event-stream", {});
    std::lock_guard<std::mutex> lock(mu);
    held = ex;
  };
  RawClient c(port());
  ASSERT_TRUE(c.Send(GetRequest("/s")));
  ASSERT_TRUE(c.ReadUntil("3\r\n:\n\n\r\n3\r\n:\n\n\r\n", 2000ms)) << c.received();
  std::lock_guard<std::mutex> lock(mu);
  held->End();
}

TEST_F(HttpServerTest, DisconnectIsDetectedWhileStreaming) {
  Start();
  std::atomic<int> closes{0};
  std::shared_ptr<Exchange> held;
  std::mutex mu;
  handler_ = [&](Request, std::shared_ptr<Exchange> ex) {
    ex->StartStream(200, "text/event-stream", {});
    ex->OnClose([&closes] { closes++; });
    std::lock_guard<std::mutex> lock(mu);
    held = ex;
  };
  auto start = std::chrono::steady_clock::now();
  {
    RawClient c(port());
    ASSERT_TRUE(c.Send(GetRequest("/s")));
    ASSERT_TRUE(c.ReadUntil("\r\n\r\n"));
  }  // closes
  ASSERT_TRUE(WaitFor([&] { return closes.load() == 1; }, 1000ms));
  EXPECT_LT(std::chrono::steady_clock::now() - start, 1000ms);
  std::lock_guard<std::mutex> lock(mu);
  EXPECT_TRUE(held->closed());
  EXPECT_FALSE(held->Write("data: x\n\n"));
  EXPECT_EQ(closes.load(), 1);
}

TEST_F(HttpServerTest, DisconnectIsDetectedBeforeAnyResponse) {
  Start();
  std::atomic<int> closes{0};
  std::vector<std::shared_ptr<Exchange>> held;
  std::mutex mu;
  handler_ = [&](Request, std::shared_ptr<Exchange> ex) {
    ex->OnClose([&closes] { closes++; });
    std::lock_guard<std::mutex> lock(mu);
    held.push_back(ex);
  };
  {
    RawClient c(port());
    ASSERT_TRUE(c.Send(PostRequest("/g", "{}")));
    std::this_thread::sleep_for(50ms);
    c.Reset();
  }
  EXPECT_TRUE(WaitFor([&] { return closes.load() == 1; }, 1000ms));
  // A callback registered after the disconnect still runs.
  std::lock_guard<std::mutex> lock(mu);
  std::atomic<bool> late{false};
  held[0]->OnClose([&late] { late = true; });
  EXPECT_TRUE(WaitFor([&] { return late.load(); }, 1000ms));
}

TEST_F(HttpServerTest, OnCloseDoesNotFireAfterTheResponseCompleted) {
  Start();
  std::atomic<int> closes{0};
  handler_ = [&](Request req, std::shared_ptr<Exchange> ex) {
    ex->OnClose([&closes] { closes++; });
    Echo(std::move(req), ex);
  };
  {
    RawClient c(port());
    ASSERT_TRUE(c.Send(GetRequest("/x")));
    ASSERT_TRUE(c.ReadUntil("GET /x"));
  }
  EXPECT_TRUE(WaitFor([&] { return server_->connection_count() == 0; }));
  EXPECT_EQ(closes.load(), 0);
}

TEST_F(HttpServerTest, SlowReaderIsCutOffInsteadOfBufferingForever) {
  ServerOptions o;
  o.max_pending_write_bytes = 64 * 1024;
  Start(o);
  RawClient c(port());
  std::shared_ptr<Exchange> ex = OpenEventStream(c);
  std::string frame = "data: " + std::string(1024, 'x') + "\n\n";
  int64_t written = 0;
  bool cut = false;
  for (int i = 0; i < 400000 && !cut; ++i) {  // at most ~400 MB
    if (!ex->Write(frame)) {
      cut = true;
    } else {
      written += static_cast<int64_t>(frame.size());
    }
  }
  EXPECT_TRUE(cut) << written;
  EXPECT_TRUE(ex->closed());
}

TEST_F(HttpServerTest, StopClosesOpenConnections) {
  Start();
  std::vector<std::shared_ptr<Exchange>> held;
  std::mutex mu;
  handler_ = [&](Request, std::shared_ptr<Exchange> ex) {
    ex->StartStream(200, "text/event-stream", {});
    std::lock_guard<std::mutex> lock(mu);
    held.push_back(ex);
  };
  RawClient a(port()), b(port());
  ASSERT_TRUE(a.Send(GetRequest("/s")));
  ASSERT_TRUE(a.ReadUntil("\r\n\r\n"));
  auto start = std::chrono::steady_clock::now();
  server_->Stop();
  EXPECT_LT(std::chrono::steady_clock::now() - start, 2000ms);
  EXPECT_TRUE(a.ReadToClose(1000ms));
  EXPECT_TRUE(b.ReadToClose(1000ms));
  std::lock_guard<std::mutex> lock(mu);
  for (auto& ex : held) EXPECT_FALSE(ex->Write("data: late\n\n"));
}

// An engine thread keeps writing to a stream while the server is destroyed: its Exchange calls
// must never hold the last reference to a connection past the server's io_context (ASan found
// a use after free there when a call's reference outlived the server).
TEST_F(HttpServerTest, DestroyedWhileAnotherThreadWrites) {
  for (int round = 0; round < 20; ++round) {
    Start();
    RawClient c(port());
    std::shared_ptr<Exchange> ex = OpenEventStream(c);
    std::atomic<bool> done{false};
    std::thread writer([&] {
      while (!done) {
        ex->Write("data: x\n\n");
        ex->closed();
        ex->Post([] {});
      }
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(round % 4));
    server_.reset();
    done = true;
    writer.join();
    EXPECT_FALSE(ex->Write("data: late\n\n"));
    EXPECT_TRUE(ex->closed());
    ex.reset();
  }
}

long ResidentKiB() {
  std::ifstream statm("/proc/self/statm");
  long pages = 0, resident = 0;
  statm >> pages >> resident;
  return resident * (sysconf(_SC_PAGESIZE) / 1024);
}

// 1,000 clients each hold an open event stream that only receives keep-alive comments: the
// server serves them from its two I/O threads, and memory stays flat (a few KiB each).
TEST_F(HttpServerTest, ThousandIdleStreamsWithFlatMemory) {
  ServerOptions o;
  o.sse_keep_alive = 200ms;
  Start(o);
  std::mutex mu;
  std::vector<std::shared_ptr<Exchange>> held;
  held.reserve(1000);
  handler_ = [&](Request, std::shared_ptr<Exchange> ex) {
    ex->StartStream(200, "text/event-stream", {});
    std::lock_guard<std::mutex> lock(mu);
    held.push_back(ex);
  };
  // Warm up allocator pools with a first batch, then measure the next 1,000.
  std::vector<std::unique_ptr<RawClient>> clients;
  for (int i = 0; i < 50; ++i) {
    clients.push_back(std::make_unique<RawClient>(port()));
    ASSERT_TRUE(clients.back()->Send(GetRequest("/s")));
  }
  ASSERT_TRUE(WaitFor([&] {
    std::lock_guard<std::mutex> l(mu);
    return held.size() == 50;
  }));
  const long before = ResidentKiB();
  for (int i = 0; i < 1000; ++i) {
    clients.push_back(std::make_unique<RawClient>(port()));
    ASSERT_TRUE(clients.back()->connected()) << i;
    ASSERT_TRUE(clients.back()->Send(GetRequest("/s")));
  }
  ASSERT_TRUE(WaitFor(
      [&] {
        std::lock_guard<std::mutex> l(mu);
        return held.size() == 1050;
      },
      10000ms));
  // Every stream gets its keep-alive comments.
  for (auto& c : clients) ASSERT_TRUE(c->ReadUntil("3\r\n:\n\n\r\n", 3000ms));
  const long growth = ResidentKiB() - before;
  EXPECT_EQ(server_->connection_count(), 1050u);
  EXPECT_LT(growth, 1000 * 32) << "KiB for 1000 idle streams";  // < 32 KiB per stream
  RecordProperty("rss_growth_kib_per_1000_streams", static_cast<int>(growth));
  clients.clear();  // all disconnect
  EXPECT_TRUE(WaitFor([&] { return server_->connection_count() == 0; }, 5000ms));
}

}  // namespace
}  // namespace kiln::http
