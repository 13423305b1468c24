#include "api/sse.h"

namespace kiln::api {

std::string SseData(std::string_view payload) {
  std::string frame;
  frame.reserve(payload.size() + 8);
  // A payload never holds a raw newline: it is serialized JSON, whose strings escape them.
  frame.append("data: ").append(payload).append("\n\n");
  return frame;
}

}  // namespace kiln::api
