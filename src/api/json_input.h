// Parsing request bodies that may be hostile: invalid JSON or UTF-8, numbers out of range and
// deep nesting all become a 400 ApiError with a clear message, never a crash or a 5xx.
#pragma once

#include <nlohmann/json.hpp>
#include <string_view>

namespace kiln::api {

// Deeper documents are refused before parsing: no request of ours nests beyond a handful of
// levels, and unbounded depth costs stack and memory.
inline constexpr int kMaxJsonDepth = 64;

// Parses `body` as one JSON object. Throws ApiError: 400 for syntax, UTF-8, depth and range
// errors; 422 when the document is valid JSON but not an object.
nlohmann::json ParseJsonObject(std::string_view body, int max_depth = kMaxJsonDepth);

}  // namespace kiln::api
