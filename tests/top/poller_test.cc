// The poller against an in-process HTTP server: what each kind of answer becomes.
#include "top/poller.h"

#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <string>

#include "http/http_server.h"

namespace kiln::top {
namespace {

using std::chrono::milliseconds;

std::string Status(double uptime, int64_t generated) {
  return R"({"object": "kiln.status", "model": "m", "uptime_s": )" + std::to_string(uptime) +
         R"(, "tokens": {"generated": )" + std::to_string(generated) + "}}";
}

// Answers GET /v1/status with whatever the test last set.
class FakeTarget {
 public:
  FakeTarget() {
    http::ServerOptions o;
    o.port = 0;
    o.io_threads = 1;
    server_ = std::make_unique<http::HttpServer>(
        o, [this](http::Request req, std::shared_ptr<http::Exchange> ex) {
          std::lock_guard lock(mu_);
          http::Response r;
          r.status = req.path == "/v1/status" ? status_ : 404;
          r.content_type = "application/json";
          r.body = body_;
          ex->Respond(std::move(r));
        });
    server_->Start();
  }
  ~FakeTarget() { server_->Stop(); }
  void Set(int status, std::string body) {
    std::lock_guard lock(mu_);
    status_ = status;
    body_ = std::move(body);
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(server_->port()); }

 private:
  std::mutex mu_;
  int status_ = 200;
  std::string body_;
  std::unique_ptr<http::HttpServer> server_;
};

TEST(Poller, AKilnServerGetsRatesFromTwoPolls) {
  FakeTarget t;
  Poller poller({t.url()}, "", milliseconds(2000));
  EXPECT_EQ(poller.targets()[0].health, Health::kPending);
  t.Set(200, Status(10.0, 100));
  poller.PollOnce();
  t.Set(200, Status(12.0, 160));
  poller.PollOnce();
  const TargetView& v = poller.targets().at(0);
  EXPECT_EQ(v.health, Health::kUp) << v.error;
  EXPECT_EQ(v.url, t.url());
  ASSERT_TRUE(v.rates.valid);
  EXPECT_DOUBLE_EQ(v.rates.generated_tokens_per_s, 30.0);
}

TEST(Poller, NotKilnThenBackWithoutRestarting) {
  FakeTarget t;
  Poller poller({t.url()}, "", milliseconds(2000));
  t.Set(404, "nope");
  poller.PollOnce();
  EXPECT_EQ(poller.targets()[0].health, Health::kNotKiln);
  EXPECT_NE(poller.targets()[0].error.find("HTTP 404"), std::string::npos);
  t.Set(200, "<html></html>");
  poller.PollOnce();
  EXPECT_EQ(poller.targets()[0].health, Health::kNotKiln);
  EXPECT_NE(poller.targets()[0].error.find("not a Kiln server"), std::string::npos);
  t.Set(200, Status(1.0, 0));
  poller.PollOnce();
  EXPECT_EQ(poller.targets()[0].health, Health::kUp);
}

TEST(Poller, ARefusedConnectionIsUnreachable) {
  std::string url;
  {
    FakeTarget gone;  // a port that was just free, now closed again
    url = gone.url();
  }
  Poller poller({url}, "", milliseconds(1000));
  poller.PollOnce();
  EXPECT_EQ(poller.targets()[0].health, Health::kUnreachable);
  EXPECT_FALSE(poller.targets()[0].error.empty());
}

TEST(Poller, ARouterBecomesOneRowPerReplica) {
  FakeTarget t;
  t.Set(200, R"({"object": "kiln.router_status", "replicas": [
      {"index": 0, "port": 1, "state": "ready", "object": "kiln.status", "model": "a"},
      {"index": 1, "port": 2, "state": "starting"}]})");
  Poller poller({t.url()}, "", milliseconds(2000));
  poller.PollOnce();
  ASSERT_EQ(poller.targets().size(), 2u);
  EXPECT_EQ(poller.targets()[0].url, t.url() + " #0");
  EXPECT_EQ(poller.targets()[0].health, Health::kUp);
  EXPECT_EQ(poller.targets()[1].health, Health::kUnreachable);
  EXPECT_NE(poller.targets()[1].error.find("starting"), std::string::npos);
}

}  // namespace
}  // namespace kiln::top
