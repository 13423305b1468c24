// GenerationBackend over the real kiln::Engine. Shutdown() (an unloaded model) ends every
// request still running, as cancelled, and frees the engine; the backend then refuses work.
#pragma once

#include <memory>
#include <shared_mutex>

#include "engine/engine.h"
#include "server/generation_backend.h"
#include "util/error.h"

namespace kiln {

class EngineBackend : public GenerationBackend {
 public:
  explicit EngineBackend(std::unique_ptr<Engine> engine) : engine_(std::move(engine)) {}
  uint64_t Submit(GenerationRequest request, EventSink sink) override {
    std::shared_lock lock(mu_);
    KILN_CHECK(engine_ != nullptr, "the model has been unloaded");
    return engine_->Submit(std::move(request), std::move(sink));
  }
  void Cancel(uint64_t id) override {
    std::shared_lock lock(mu_);
    if (engine_ != nullptr) engine_->Cancel(id);
  }
  EngineStats Stats() const override {
    std::shared_lock lock(mu_);
    return engine_ != nullptr ? engine_->Stats() : EngineStats{};
  }
  void Shutdown() {
    std::unique_ptr<Engine> dying;
    {
      std::unique_lock lock(mu_);
      dying = std::move(engine_);
    }
    dying.reset();  // outside the lock: the last events' sinks may call Cancel
  }

 private:
  mutable std::shared_mutex mu_;
  std::unique_ptr<Engine> engine_;
};

}  // namespace kiln
