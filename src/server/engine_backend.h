// GenerationBackend over the real kiln::Engine.
#pragma once

#include <memory>

#include "engine/engine.h"
#include "server/generation_backend.h"

namespace kiln {

class EngineBackend : public GenerationBackend {
 public:
  explicit EngineBackend(std::unique_ptr<Engine> engine) : engine_(std::move(engine)) {}
  uint64_t Submit(GenerationRequest request, EventSink sink) override {
    return engine_->Submit(std::move(request), std::move(sink));
  }
  void Cancel(uint64_t id) override { engine_->Cancel(id); }
  EngineStats Stats() const override { return engine_->Stats(); }

 private:
  std::unique_ptr<Engine> engine_;
};

}  // namespace kiln
