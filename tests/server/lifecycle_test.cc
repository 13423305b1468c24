// Admission, client disconnects and draining.
#include <gtest/gtest.h>

#include <future>
#include <string>
#include <thread>
#include <vector>

#include "server/server_fixture.h"

namespace kiln::testing {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;

class LifecycleTest : public ServerTest {
 protected:
  template <typename Pred>
  static bool WaitFor(Pred pred, std::chrono::milliseconds timeout = 3000ms) {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    while (!pred()) {
      if (std::chrono::steady_clock::now() > deadline) return false;
      std::this_thread::sleep_for(2ms);
    }
    return true;
  }
};

// max_concurrent 2 + queue 2: four long requests are admitted, the next ones get 429 at once.
TEST_F(LifecycleTest, AdmissionRefusesPastConcurrencyPlusQueue) {
  config_.max_concurrent_requests = 2;
  config_.max_queue = 2;
  StartServer();
  std::vector<std::unique_ptr<RawClient>> held;
  for (int i = 0; i < 4; ++i) {
    held.push_back(std::make_unique<RawClient>(port()));
    held.back()->Send(PostRequest(i % 2 ? "/generate_stream" : "/generate",
                                  R"({"inputs": "HOLD", "parameters": {"max_new_tokens": 3}})"));
  }
  ASSERT_TRUE(WaitFor([&] { return engine_.active() == 4; }));
  for (const char* path : {"/generate", "/generate_stream", "/v1/chat/completions"}) {
    std::string body = std::string(path) == "/v1/chat/completions"
                           ? R"({"messages": [{"role": "user", "content": "x"}], "stream": true})"
                           : R"({"inputs": "x"})";
    auto start = std::chrono::steady_clock::now();
    HttpResult r = Post(path, body);
    EXPECT_LT(std::chrono::steady_clock::now() - start, 1000ms);
    EXPECT_EQ(r.status, 429) << path;
    EXPECT_TRUE(r.HasHeader("Retry-After: 1"));
    EXPECT_NE(r.body.find("Model is overloaded"), std::string::npos);
  }
  engine_.Release();
  for (auto& c : held) EXPECT_EQ(ReadResponse(*c).status, 200);
  EXPECT_TRUE(WaitFor([&] { return server_->state().admission.in_flight() == 0; }));
  EXPECT_EQ(Post("/generate", R"({"inputs": "x", "parameters": {"max_new_tokens": 1}})").status,
            200);
  EXPECT_NE(Get("/metrics").body.find("tgi_request_failure{err=\"overloaded\"} 3"),
            std::string::npos);
}

TEST_F(LifecycleTest, DisconnectCancelsStreamingAndQueuedRequests) {
  StartServer();
  for (const char* path : {"/generate_stream", "/generate", "/v1/chat/completions"}) {
    std::string body = std::string(path) == "/v1/chat/completions"
                           ? R"({"messages": [{"role": "user", "content": "HOLD"}],
                                 "stream": true, "max_tokens": 3})"
                           : R"({"inputs": "HOLD", "parameters": {"max_new_tokens": 3}})";
    const size_t cancelled_before = engine_.cancelled().size();
    {
      RawClient c(port());
      c.Send(PostRequest(path, body));
      ASSERT_TRUE(WaitFor([&] { return engine_.active() == 1; })) << path;
    }  // the client leaves
    EXPECT_TRUE(WaitFor([&] { return engine_.cancelled().size() == cancelled_before + 1; }, 1000ms))
        << path;
    EXPECT_TRUE(WaitFor([&] { return engine_.active() == 0; }));
    EXPECT_TRUE(WaitFor([&] { return server_->state().admission.in_flight() == 0; })) << path;
  }
  EXPECT_NE(Get("/metrics").body.find("tgi_request_failure{err=\"dropped\"} 3"), std::string::npos);
}

TEST_F(LifecycleTest, DisconnectMidStreamStopsGeneration) {
  StartServer();
  engine_.script = std::string(1000, 'z');
  {
    RawClient c(port());
    c.Send(PostRequest("/generate_stream", R"({"inputs": "x", "parameters":
                                               {"max_new_tokens": 4000}})"));
    ASSERT_TRUE(c.ReadUntil("data: "));
    c.Reset();
  }
  EXPECT_TRUE(WaitFor([&] { return engine_.active() == 0; }, 2000ms));
  EXPECT_TRUE(WaitFor([&] { return server_->state().admission.in_flight() == 0; }));
}

TEST_F(LifecycleTest, DrainTurnsHealthTo503AndLetsInFlightRequestsFinish) {
  StartServer();
  RawClient inflight(port());
  inflight.Send(
      PostRequest("/generate", R"({"inputs": "HOLD", "parameters": {"max_new_tokens": 3}})"));
  ASSERT_TRUE(WaitFor([&] { return engine_.active() == 1; }));
  server_->BeginDrain();
  HttpResult health = Get("/health");
  EXPECT_EQ(health.status, 503);
  EXPECT_EQ(health.Json(), json({{"error", "unhealthy"}, {"error_type", "healthcheck"}}));
  HttpResult refused = Post("/generate", R"({"inputs": "x"})");
  EXPECT_EQ(refused.status, 503);
  EXPECT_FALSE(server_->WaitDrained(50ms));
  engine_.Release();
  EXPECT_EQ(ReadResponse(inflight).status, 200);
  EXPECT_TRUE(server_->WaitDrained(2000ms));
}

TEST_F(LifecycleTest, ConcurrentClientsAllComplete) {
  StartServer();
  std::vector<std::future<int>> results;
  for (int i = 0; i < 32; ++i) {
    results.push_back(std::async(std::launch::async, [this, i] {
      const char* path = i % 3 == 0   ? "/generate"
                         : i % 3 == 1 ? "/generate_stream"
                                      : "/v1/completions";
      std::string body = i % 3 == 2 ? R"({"prompt": "x", "max_tokens": 5, "stream": true})"
                                    : R"({"inputs": "x", "parameters": {"max_new_tokens": 5}})";
      return Post(path, body).status;
    }));
  }
  for (auto& r : results) EXPECT_EQ(r.get(), 200);
  EXPECT_TRUE(WaitFor([&] { return server_->state().admission.in_flight() == 0; }));
}

TEST_F(LifecycleTest, KeepAliveAfterStreams) {
  StartServer();
  RawClient c(port());
  for (int i = 0; i < 3; ++i) {
    c.Send(
        PostRequest("/generate_stream", R"({"inputs": "x", "parameters": {"max_new_tokens": 2}})"));
    HttpResult r = ReadResponse(c);
    EXPECT_EQ(r.status, 200);
    EXPECT_EQ(SseData(r.body).size(), 2u);
  }
}

}  // namespace
}  // namespace kiln::testing
