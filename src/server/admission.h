// Admission control: at most `max_concurrent + max_queue` generation requests admitted at once
// (running in the engine, or waiting in its queue); one more is refused at once with 429
// "Model is overloaded" rather than queued without bound (TGI's semaphore with try_acquire,
// plus an explicit queue bound). A Permit is held for the request's whole life.
#pragma once

#include <atomic>
#include <cstdint>
#include <optional>

namespace kiln {

class Admission {
 public:
  class Permit {
   public:
    Permit() = default;
    explicit Permit(Admission* owner) : owner_(owner) {}
    Permit(Permit&& other) noexcept : owner_(other.owner_) { other.owner_ = nullptr; }
    Permit& operator=(Permit&& other) noexcept {
      if (this != &other) {
        Release();
        owner_ = other.owner_;
        other.owner_ = nullptr;
      }
      return *this;
    }
    ~Permit() { Release(); }
    void Release() {
      if (owner_ != nullptr) owner_->in_flight_.fetch_sub(1);
      owner_ = nullptr;
    }
    bool held() const { return owner_ != nullptr; }

   private:
    Admission* owner_ = nullptr;
  };

  Admission(int64_t max_concurrent, int64_t max_queue) : capacity_(max_concurrent + max_queue) {}

  // A permit, or nullopt when `capacity` requests are in flight.
  std::optional<Permit> TryAcquire() {
    int64_t now = in_flight_.load();
    while (now < capacity_) {
      if (in_flight_.compare_exchange_weak(now, now + 1)) return Permit(this);
    }
    return std::nullopt;
  }

  int64_t in_flight() const { return in_flight_.load(); }
  int64_t capacity() const { return capacity_; }

 private:
  const int64_t capacity_;
  std::atomic<int64_t> in_flight_{0};
};

}  // namespace kiln
