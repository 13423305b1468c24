#include "cli/engine_run.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <numeric>
#include <thread>
#include <utility>

#include "util/error.h"

namespace kiln {
namespace {

// Shared between the submitting thread and the engine thread's sinks.
struct Collector {
  std::mutex mu;
  std::condition_variable done_cv;
  std::vector<RequestOutcome> outcomes;
  size_t finished = 0;
  EventObserver observer;

  void OnEvent(size_t index, GenerationEvent&& ev) {
    if (observer) observer(index, ev);
    std::lock_guard lock(mu);
    RequestOutcome& out = outcomes[index];
    if (ev.finish == FinishReason::kError) out.error = ev.error;
    const bool last = ev.finish.has_value();
    out.events.push_back(std::move(ev));
    if (last) {
      ++finished;
      done_cv.notify_all();
    }
  }
  void Refused(size_t index, std::string error) {
    std::lock_guard lock(mu);
    outcomes[index].error = std::move(error);
    ++finished;
    done_cv.notify_all();
  }
};

// Waits until the engine has run `step` steps or every request submitted so far has finished.
void WaitForStep(Engine& engine, Collector& c, int64_t step, size_t submitted) {
  while (engine.Stats().steps < step) {
    {
      std::lock_guard lock(c.mu);
      if (c.finished == submitted) return;
    }
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
}

}  // namespace

std::vector<RequestOutcome> RunRequests(Engine& engine, std::vector<PendingRequest> requests,
                                        const EventObserver& observer) {
  auto c = std::make_shared<Collector>();
  c->outcomes.resize(requests.size());
  c->observer = observer;
  std::vector<size_t> order(requests.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return requests[a].arrival_step < requests[b].arrival_step;
  });
  size_t submitted = 0;
  for (size_t i : order) {
    WaitForStep(engine, *c, requests[i].arrival_step, submitted);
    ++submitted;
    try {
      engine.Submit(std::move(requests[i].request), [c, i](GenerationEvent&& ev) {
        c->OnEvent(i, std::move(ev));
        return true;
      });
    } catch (const Error& e) {
      c->Refused(i, e.what());
    }
  }
  std::unique_lock lock(c->mu);
  c->done_cv.wait(lock, [&] { return c->finished == requests.size(); });
  return std::move(c->outcomes);
}

}  // namespace kiln
