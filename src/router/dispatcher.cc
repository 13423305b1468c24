#include "router/dispatcher.h"

namespace kiln {

Dispatcher::Dispatcher(boost::asio::io_context& loop, const LaunchConfig& config,
                       Supervisor& supervisor, RouterMetrics& metrics)
    : loop_(loop),
      config_(config),
      supervisor_(&supervisor),
      metrics_(metrics),
      balancer_(config.prefix_affinity_slack) {}

Replica* Dispatcher::replica(int index) {
  if (supervisor_ == nullptr) return nullptr;
  auto& replicas = supervisor_->replicas();
  if (index < 0 || static_cast<size_t>(index) >= replicas.size()) return nullptr;
  return &replicas[static_cast<size_t>(index)];
}

void Dispatcher::Submit(std::shared_ptr<ProxyCall> call) {
  live_.emplace(call.get(), call);
  if (draining_ || stopping_) {
    ++counters_.unavailable;
    return call->Fail(api::ShuttingDownError());
  }
  if (queue_.empty() && TryDispatch(call)) return;
  if (static_cast<int64_t>(queue_.size()) >= config_.router_queue) {
    ++counters_.rejected;
    return call->Fail(api::OverloadedError());
  }
  Enqueue(std::move(call), /*front=*/false);
}

bool Dispatcher::Retry(std::shared_ptr<ProxyCall> call, Replica& r, bool queue_if_busy) {
  if (queue_if_busy) {
    ++r.failures;
    if (supervisor_ != nullptr) supervisor_->Suspect(r);
  }
  if (call->attempts() > config_.max_retries || stopping_) return false;
  if (TryDispatch(call)) {
    ++counters_.retries;
    return true;
  }
  if (!queue_if_busy) return false;
  ++counters_.retries;
  Enqueue(std::move(call), /*front=*/true);
  return true;
}

void Dispatcher::Released(int index, uint64_t generation, bool generation_route) {
  Replica* r = replica(index);
  if (r != nullptr && generation_route && r->generation == generation && r->outstanding > 0) {
    --r->outstanding;
  }
  Pump();
}

void Dispatcher::Pump() {
  while (!queue_.empty()) {
    std::shared_ptr<ProxyCall> call = queue_.front();
    if (call->client_gone() || call->finished()) {
      queue_.pop_front();
      continue;
    }
    if (!TryDispatch(call)) return;
    queue_.pop_front();
  }
}

bool Dispatcher::TryDispatch(const std::shared_ptr<ProxyCall>& call) {
  if (supervisor_ == nullptr || stopping_) return false;
  auto& replicas = supervisor_->replicas();
  std::vector<ReplicaLoad> loads(replicas.size());
  for (size_t i = 0; i < replicas.size(); ++i) {
    const Replica& r = replicas[i];
    loads[i].available = r.available();
    loads[i].outstanding = r.outstanding;
    loads[i].reported = r.reported;
    // Requests that take no admission permit (tokenize, info) are never held back.
    loads[i].capacity = call->generation() ? r.capacity : 0;
    loads[i].excluded = call->Excluded(r);
  }
  const std::optional<size_t> pick = balancer_.Pick(loads, call->prefix_key());
  if (!pick) return false;
  call->SendTo(replicas[*pick]);
  return true;
}

void Dispatcher::Enqueue(std::shared_ptr<ProxyCall> call, bool front) {
  call->set_queued_at(Clock::now());
  if (front) {
    queue_.push_front(std::move(call));
  } else {
    queue_.push_back(std::move(call));
  }
}

void Dispatcher::Tick(Clock::time_point now) {
  for (auto it = queue_.begin(); it != queue_.end();) {
    std::shared_ptr<ProxyCall> call = *it;
    if (call->client_gone() || call->finished()) {
      it = queue_.erase(it);
    } else if (now - call->queued_at() > config_.queue_timeout) {
      it = queue_.erase(it);
      ++counters_.unavailable;
      call->Fail(api::ApiError(503, "unavailable",
                               "No replica could take the request within the queue timeout"));
    } else {
      ++it;
    }
  }
  Pump();
}

void Dispatcher::BeginDrain() { draining_ = true; }

void Dispatcher::Shutdown() {
  stopping_ = true;
  queue_.clear();
  std::vector<std::shared_ptr<ProxyCall>> calls;
  for (const auto& [raw, weak] : live_) {
    if (auto call = weak.lock()) calls.push_back(std::move(call));
  }
  for (const auto& call : calls) call->ClientGone();  // cancels its replica request
  live_.clear();
}

}  // namespace kiln
