#include "telemetry/span_exporter.h"

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <optional>
#include <thread>

#include "http/client/http_client.h"
#include "http/client/url.h"
#include "telemetry/otlp_encode.h"
#include "util/error.h"
#include "util/log.h"

namespace kiln::telemetry {
namespace {

using Clock = std::chrono::steady_clock;

constexpr std::chrono::seconds kWarnEvery{60};

http::Url EndpointUrl(const std::string& endpoint) {
  KILN_CHECK(!endpoint.empty(), "OTLP endpoint: empty URL");
  // Checked here as well as in ParseUrl so that the message names the OTLP endpoint.
  KILN_CHECK(endpoint.rfind("https://", 0) != 0, "OTLP endpoint '", endpoint,
             "': https is not supported (the exporter has no TLS); use http:// to a local "
             "collector or a TLS-terminating proxy");
  http::Url url;
  try {
    url = http::ParseUrl(endpoint);
  } catch (const Error& e) {
    throw Error(StrCat("OTLP endpoint: ", e.what()));
  }
  if (url.path.empty() || url.path == "/") url.path = "/v1/traces";
  return url;
}

}  // namespace

class SpanExporter::Impl {
 public:
  explicit Impl(ExporterOptions options)
      : options_(std::move(options)), url_(EndpointUrl(options_.endpoint)) {
    KILN_CHECK(options_.max_queue_spans > 0 && options_.max_batch_spans > 0,
               "span exporter: queue and batch sizes must be > 0");
    thread_ = std::thread([this] { Run(); });
  }

  void Export(std::vector<Span> spans) {
    bool wake = false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (Span& s : spans) {
        if (stopping_ || queue_.size() >= options_.max_queue_spans) {
          ++dropped_;
          ++dropped_since_warning_;
          continue;
        }
        if (queue_.empty()) oldest_ = Clock::now();
        queue_.push_back(std::move(s));
      }
      wake = queue_.size() >= options_.max_batch_spans;
    }
    if (wake) cv_.notify_one();
  }

  void Shutdown(std::chrono::milliseconds deadline) {
    // Held throughout, so a second caller (the destructor, another thread) waits for the
    // first and then finds the thread joined.
    std::lock_guard<std::mutex> once(shutdown_mu_);
    if (!thread_.joinable()) return;
    {
      std::lock_guard<std::mutex> lock(mu_);
      stopping_ = true;
      shutdown_deadline_ = Clock::now() + deadline;
    }
    cv_.notify_one();
    // The sender flushes what is queued until the deadline; past it, its export in flight is
    // cut short (io_context::stop is thread-safe) and the rest is dropped.
    std::unique_lock<std::mutex> lock(mu_);
    if (!done_cv_.wait_until(lock, shutdown_deadline_, [this] { return done_; })) {
      abandon_ = true;
      while (!done_) {
        io_.stop();
        done_cv_.wait_for(lock, std::chrono::milliseconds(10));
      }
    }
    lock.unlock();
    thread_.join();
  }

  ExporterCounters counters() const {
    std::lock_guard<std::mutex> lock(mu_);
    ExporterCounters c;
    c.exported = exported_;
    c.dropped = dropped_;
    c.failed_exports = failed_exports_;
    c.queued = queue_.size();
    return c;
  }

 private:
  // Sender thread: a batch when one is full, when the oldest span waited flush_interval, or
  // at shutdown; ends when stopping and the queue is empty (or abandoned).
  void Run() {
    std::unique_ptr<http::HttpClient> client;
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      // A queued span waits at most flush_interval; an empty queue is looked at again after
      // one interval (Export wakes the thread only for a full batch).
      const Clock::time_point wake =
          (queue_.empty() ? Clock::now() : oldest_) + options_.flush_interval;
      cv_.wait_until(lock, wake, [this] {
        return stopping_ || queue_.size() >= options_.max_batch_spans ||
               (!queue_.empty() && Clock::now() - oldest_ >= options_.flush_interval);
      });
      if (abandon_ || (stopping_ && queue_.empty())) break;
      if (queue_.empty()) continue;
      if (!stopping_ && queue_.size() < options_.max_batch_spans &&
          Clock::now() - oldest_ < options_.flush_interval) {
        continue;
      }
      std::vector<Span> batch;
      const size_t n = std::min(queue_.size(), options_.max_batch_spans);
      batch.reserve(n);
      for (size_t i = 0; i < n; ++i) {
        batch.push_back(std::move(queue_.front()));
        queue_.pop_front();
      }
      if (!queue_.empty()) oldest_ = Clock::now();
      std::chrono::milliseconds timeout = options_.export_timeout;
      if (stopping_) {
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(shutdown_deadline_ -
                                                                                Clock::now());
        timeout = std::max(std::chrono::milliseconds(1), std::min(timeout, left));
      }
      lock.unlock();
      std::string error;
      const bool ok = Send(client, batch, timeout, error);
      lock.lock();
      if (std::optional<Warning> w = Account(ok, batch.size(), error)) {
        lock.unlock();  // stderr may block; Export must not wait on it
        Warn(*w);
        lock.lock();
      }
    }
    // Whatever is left (abandoned at the deadline) is dropped.
    dropped_ += queue_.size();
    queue_.clear();
    done_ = true;
    done_cv_.notify_all();
  }

  // One export request; false with `error` when it was refused, timed out, or not 2xx.
  bool Send(std::unique_ptr<http::HttpClient>& client, const std::vector<Span>& batch,
            std::chrono::milliseconds timeout, std::string& error) {
    try {
      if (client == nullptr) {
        // The client's own timeouts back up the deadline below, which is what bounds a
        // collector that trickles bytes.
        http::ClientOptions o;
        o.connect_timeout = options_.export_timeout;
        o.idle_timeout = options_.export_timeout;
        o.user_agent = "kiln-otlp/" KILN_VERSION;
        client = std::make_unique<http::HttpClient>(io_, url_, o);
      }
      http::ClientRequest request;
      request.method = "POST";
      request.target = url_.path;
      request.body =
          EncodeExportRequest(batch, options_.service_name, options_.resource_attributes);
      request.headers = {{"Content-Type", "application/x-protobuf"}};
      bool ended = false;
      http::StreamOutcome outcome;
      http::StreamCallbacks cb;
      cb.on_end = [&](const http::StreamOutcome& o) {
        ended = true;
        outcome = o;
      };
      io_.restart();
      const uint64_t id = client->Start(std::move(request), std::move(cb));
      const auto deadline = Clock::now() + timeout;
      while (!ended && !abandon_ && Clock::now() < deadline) {
        io_.run_one_until(deadline);
        if (io_.stopped()) break;
      }
      if (!ended) {
        io_.restart();
        client->Cancel(id);  // runs on_end(kCancelled) before it returns
        io_.poll();
        error = abandon_ ? "shutdown deadline" : "timed out";
        return false;
      }
      if (outcome.end != http::StreamEnd::kComplete) {
        error = outcome.error.empty() ? "no response" : outcome.error;
        return false;
      }
      if (outcome.status < 200 || outcome.status >= 300) {
        error = "HTTP " + std::to_string(outcome.status);
        return false;
      }
      return true;
    } catch (const std::exception& e) {  // the collector's name no longer resolves, ...
      client.reset();
      error = e.what();
      return false;
    }
  }

  struct Warning {
    std::string error;
    uint64_t dropped;
  };

  // Under mu_. A warning to log (without mu_) when spans were lost and none was logged for a
  // minute: failed exports, or a queue that overflowed while exports succeed.
  std::optional<Warning> Account(bool ok, size_t spans, const std::string& error) {
    if (ok) {
      exported_ += spans;
    } else {
      ++failed_exports_;
      dropped_ += spans;
      dropped_since_warning_ += spans;
    }
    if (dropped_since_warning_ == 0) return std::nullopt;
    const Clock::time_point now = Clock::now();
    if (last_warning_ != Clock::time_point() && now - last_warning_ < kWarnEvery) {
      return std::nullopt;
    }
    last_warning_ = now;
    Warning w{ok ? "export queue full" : error, dropped_since_warning_};
    dropped_since_warning_ = 0;
    return w;
  }

  void Warn(const Warning& w) const {
    log::Write(log::Level::kWarn, "kiln::telemetry", "spans dropped",
               {{"endpoint", std::string_view(options_.endpoint)},
                {"error", std::string_view(w.error)},
                {"dropped_since_last_warning", static_cast<int64_t>(w.dropped)}});
  }

  const ExporterOptions options_;
  const http::Url url_;
  boost::asio::io_context io_;  // the sender's; stopped from Shutdown past its deadline
  std::thread thread_;
  std::mutex shutdown_mu_;

  mutable std::mutex mu_;
  std::condition_variable cv_, done_cv_;
  std::deque<Span> queue_;
  Clock::time_point oldest_;  // when the queue's oldest span arrived
  bool stopping_ = false;
  std::atomic<bool> abandon_{false};
  bool done_ = false;
  Clock::time_point shutdown_deadline_;
  uint64_t exported_ = 0, dropped_ = 0, failed_exports_ = 0, dropped_since_warning_ = 0;
  Clock::time_point last_warning_;
};

SpanExporter::SpanExporter(ExporterOptions options)
    : impl_(std::make_unique<Impl>(std::move(options))) {}

SpanExporter::~SpanExporter() { Shutdown(std::chrono::seconds(2)); }

void SpanExporter::Export(std::vector<Span> spans) { impl_->Export(std::move(spans)); }

void SpanExporter::Shutdown(std::chrono::milliseconds deadline) { impl_->Shutdown(deadline); }

ExporterCounters SpanExporter::counters() const { return impl_->counters(); }

}  // namespace kiln::telemetry
