// Drives a set of requests through an Engine from the CLI and collects their events: what
// `kiln generate` (one prompt or --batch) does between parsing its input and printing.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "engine/engine.h"
#include "engine/request.h"

namespace kiln {

struct PendingRequest {
  GenerationRequest request;
  // Submitted once the engine has run this many steps (or when everything submitted before
  // it has finished), so that requests join a batch already in flight.
  int64_t arrival_step = 0;
};

struct RequestOutcome {
  std::vector<GenerationEvent> events;  // in order; the last one carries `finish`
  std::string error;                    // Submit refused the request, or a kError finish
};

// Called on the engine thread for every event, with the request's index; must not block.
using EventObserver = std::function<void(size_t index, const GenerationEvent& event)>;

// Submits `requests` in order of arrival_step (ties in input order) and waits for all to
// finish. Results are in input order.
std::vector<RequestOutcome> RunRequests(Engine& engine, std::vector<PendingRequest> requests,
                                        const EventObserver& observer = nullptr);

}  // namespace kiln
