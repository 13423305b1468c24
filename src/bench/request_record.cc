#include "bench/request_record.h"

namespace kiln::bench {

const char* StatusName(RequestStatus status) {
  switch (status) {
    case RequestStatus::kSuccessful:
      return "successful";
    case RequestStatus::kIncomplete:
      return "incomplete";
    case RequestStatus::kErrored:
      return "errored";
  }
  return "errored";
}

// The three definitions follow GuideLLM (schemas/request_stats.py).
std::optional<double> RequestRecord::TtftMs() const {
  if (!first_token_time) return std::nullopt;
  return (*first_token_time - request_start) * 1000.0;
}

std::optional<double> RequestRecord::ItlMs() const {
  if (!first_token_time || !last_token_time || output_tokens <= 1) return std::nullopt;
  return (*last_token_time - *first_token_time) * 1000.0 / static_cast<double>(output_tokens - 1);
}

std::optional<double> RequestRecord::TpotMs() const {
  if (!last_token_time || output_tokens <= 0) return std::nullopt;
  return (*last_token_time - request_start) * 1000.0 / static_cast<double>(output_tokens);
}

}  // namespace kiln::bench
