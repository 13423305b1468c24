// One encoder route's request in flight: its inputs submitted to the EncoderEngine, their
// results gathered as they come back on the engine thread, and one response built from all of
// them. A client that leaves marks the inputs not yet run as cancelled (the engine skips them);
// a failure of any input answers the whole request with an error.
#pragma once

#include <functional>
#include <vector>

#include "engine/encoder_engine.h"
#include "server/admission.h"
#include "server/reply.h"
#include "server/server_state.h"

namespace kiln {

// Builds the response body from every input's result, in input order; may throw ApiError.
using EncoderFinish = std::function<std::string(std::vector<EncoderResult>&)>;

// Submits `inputs` and answers through `reply` once all are done (200 with finish's body, or
// the error). Throws ApiError (429) when the engine's queue refuses the first input.
void RunEncoderCall(ServerState& state, Reply reply, Admission::Permit permit,
                    std::vector<EncoderRequest> inputs, EncoderFinish finish);

}  // namespace kiln
