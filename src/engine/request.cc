#include "engine/request.h"

namespace kiln {

const char* FinishReasonName(FinishReason r) {
  switch (r) {
    case FinishReason::kLength:
      return "length";
    case FinishReason::kEosToken:
      return "eos_token";
    case FinishReason::kStopSequence:
      return "stop_sequence";
    case FinishReason::kCancelled:
      return "cancelled";
    case FinishReason::kError:
      return "error";
  }
  return "unknown";
}

}  // namespace kiln
