#include "bench/benchmark_runner.h"

#include <algorithm>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <deque>
#include <optional>

#include "bench/stream_recorder.h"
#include "util/error.h"

namespace kiln::bench {

namespace asio = boost::asio;
using http::Clock;

// The state of one Run(). Timer handlers hold a shared_ptr to it: after Run() returns, handlers
// still queued in the io_context find it finished and do nothing.
class BenchmarkRunner::Session : public std::enable_shared_from_this<BenchmarkRunner::Session> {
 public:
  Session(BenchmarkRunner& runner, const Strategy& strategy, const RunLimits& limits)
      : r_(runner),
        strategy_(strategy),
        limits_(limits),
        limit_(strategy.ConcurrencyLimit()),
        deadline_(runner.io_),
        arrival_(runner.io_),
        progress_(runner.io_) {
    if (strategy.open_loop()) schedule_.emplace(strategy);
  }

  void Begin() {
    start_ = Clock::now();
    result_.strategy = strategy_;
    result_.start = Seconds(start_);
    if (limits_.max_seconds > 0) {
      deadline_.expires_at(start_ + ToDuration(limits_.max_seconds));
      deadline_.async_wait([self = shared_from_this()](auto ec) {
        if (!ec) self->Interrupt();
      });
    }
    if (r_.progress_) TickProgress();
    if (schedule_) {
      NextArrival();
    } else {
      FillClosedLoop();
    }
    CheckDone();
  }

  void Interrupt() {
    if (!finished_ && !stopping_) Stop();
  }

  BenchmarkResult TakeResult() {
    std::sort(result_.records.begin(), result_.records.end(),
              [](const RequestRecord& a, const RequestRecord& b) { return a.index < b.index; });
    return std::move(result_);
  }

 private:
  static Clock::duration ToDuration(double seconds) {
    return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
  }
  double Seconds(Clock::time_point t) const {
    return std::chrono::duration<double>(t - r_.epoch_).count();
  }

  bool CanSendMore() const {
    const int64_t planned = sent_ + static_cast<int64_t>(queued_.size());
    return !stopping_ && (limits_.max_requests <= 0 || planned < limits_.max_requests);
  }

  void FillClosedLoop() {
    while (CanSendMore() && in_flight_ < limit_) Send(Seconds(Clock::now()));
  }

  // Open loop: sends (or queues, at the concurrency cap) every arrival that is due, then waits
  // for the next. Arrivals missed while the thread was busy are sent at once, late, with their
  // scheduled time recorded.
  void NextArrival() {
    while (CanSendMore()) {
      const double offset = schedule_->Next();
      const Clock::time_point due = start_ + ToDuration(offset);
      if (due > Clock::now()) {
        arrival_.expires_at(due);
        arrival_.async_wait([self = shared_from_this(), offset](auto ec) {
          if (ec || self->finished_ || self->stopping_) return;
          self->Arrive(self->result_.start + offset);
          self->NextArrival();
        });
        return;
      }
      Arrive(result_.start + offset);
    }
  }

  void Arrive(double scheduled) {
    if (in_flight_ < limit_) {
      Send(scheduled);
    } else {
      queued_.push_back(scheduled);
    }
  }

  void Send(double scheduled) {
    RequestRecord record;
    record.index = r_.next_index_++;
    record.scheduled_time = scheduled;
    http::ClientRequest request = r_.maker_(record.index, record);
    record.request_start = Seconds(Clock::now());  // after building: data costs are not latency
    auto recorder = std::make_shared<StreamRecorder>(std::move(record));
    ++sent_;
    ++in_flight_;
    auto self = shared_from_this();
    http::StreamCallbacks cb;
    cb.on_headers = [recorder](int status, Clock::time_point) { recorder->OnHeaders(status); };
    cb.on_body = [self, recorder](std::string_view bytes, Clock::time_point t) {
      recorder->OnBody(bytes, self->Seconds(t));
    };
    cb.on_end = [self, recorder](const http::StreamOutcome& outcome) {
      recorder->OnEnd(outcome.end, outcome.error, self->Seconds(outcome.end_time));
      self->OnRequestEnd(recorder->TakeRecord());
    };
    r_.client_.Start(std::move(request), std::move(cb));
  }

  void OnRequestEnd(RequestRecord record) {
    --in_flight_;
    if (record.status == RequestStatus::kErrored) ++errored_;
    if (record.status == RequestStatus::kSuccessful) {
      ++successful_;
      output_tokens_ += record.output_tokens;
      if (auto ttft = record.TtftMs()) last_ttft_ms_ = *ttft;
    }
    result_.records.push_back(std::move(record));
    if (limits_.max_errors > 0 && errored_ >= limits_.max_errors && !stopping_) return Stop();
    if (!stopping_) {
      while (!queued_.empty() && in_flight_ < limit_) {
        const double scheduled = queued_.front();
        queued_.pop_front();
        Send(scheduled);
      }
      if (!schedule_) FillClosedLoop();
    }
    CheckDone();
  }

  // The end of the benchmark by time or errors: requests in flight become incomplete; queued
  // ones were never sent and are not recorded.
  void Stop() {
    stopping_ = true;
    stop_time_ = Clock::now();
    queued_.clear();
    arrival_.cancel();
    r_.client_.CancelAll();  // calls OnRequestEnd for each, synchronously
    CheckDone();
  }

  void CheckDone() {
    if (finished_ || in_flight_ > 0) return;
    if (!stopping_ && (CanSendMore() || !queued_.empty())) return;
    finished_ = true;
    result_.end = Seconds(stopping_ ? stop_time_ : Clock::now());
    deadline_.cancel();
    arrival_.cancel();
    progress_.cancel();
    if (r_.progress_) r_.progress_(Snapshot());
    r_.io_.stop();
  }

  void TickProgress() {
    r_.progress_(Snapshot());
    progress_.expires_after(ToDuration(r_.progress_interval_s_));
    progress_.async_wait([self = shared_from_this()](auto ec) {
      if (!ec && !self->finished_) self->TickProgress();
    });
  }

  ProgressSnapshot Snapshot() const {
    ProgressSnapshot s;
    s.strategy = &strategy_;
    s.limits = &limits_;
    s.elapsed = std::chrono::duration<double>(Clock::now() - start_).count();
    s.sent = sent_;
    s.successful = successful_;
    s.errored = errored_;
    s.in_flight = in_flight_;
    s.output_tokens = output_tokens_;
    s.ttft_ms_last = last_ttft_ms_;
    return s;
  }

  BenchmarkRunner& r_;
  Strategy strategy_;
  RunLimits limits_;
  int64_t limit_;
  asio::steady_timer deadline_, arrival_, progress_;
  std::optional<ArrivalSchedule> schedule_;
  std::deque<double> queued_;  // open loop: scheduled times waiting for a free slot
  Clock::time_point start_, stop_time_;
  BenchmarkResult result_;
  int64_t sent_ = 0, in_flight_ = 0, successful_ = 0, errored_ = 0, output_tokens_ = 0;
  double last_ttft_ms_ = 0;
  bool stopping_ = false, finished_ = false;
};

BenchmarkRunner::BenchmarkRunner(asio::io_context& io, http::HttpClient& client, RequestMaker maker,
                                 Clock::time_point epoch)
    : io_(io), client_(client), maker_(std::move(maker)), epoch_(epoch) {}

void BenchmarkRunner::SetProgress(std::function<void(const ProgressSnapshot&)> callback,
                                  double interval_s) {
  progress_ = std::move(callback);
  progress_interval_s_ = interval_s;
}

BenchmarkResult BenchmarkRunner::Run(const Strategy& strategy, const RunLimits& limits) {
  KILN_CHECK(limits.max_seconds > 0 || limits.max_requests > 0,
             "a benchmark needs --max-seconds or --max-requests");
  auto session = std::make_shared<Session>(*this, strategy, limits);
  current_ = session;
  io_.restart();
  session->Begin();
  io_.run();
  return session->TakeResult();
}

void BenchmarkRunner::Interrupt() {
  if (auto session = current_.lock()) session->Interrupt();
}

}  // namespace kiln::bench
