// What the routes need from the engine, as an interface: the real Engine behind
// EngineBackend (engine_backend.h), a scripted fake in tests. Same contract as kiln::Engine:
// Submit/Cancel/Stats are thread-safe; the sink is called on the engine's thread, must not
// block, and returning false cancels the request.
#pragma once

#include <cstdint>

#include "engine/engine.h"
#include "engine/request.h"

namespace kiln {

class GenerationBackend {
 public:
  virtual ~GenerationBackend() = default;
  // Throws kiln::Error when the request can never fit or the engine's queue is full.
  virtual uint64_t Submit(GenerationRequest request, EventSink sink) = 0;
  virtual void Cancel(uint64_t id) = 0;
  virtual EngineStats Stats() const = 0;
};

}  // namespace kiln
