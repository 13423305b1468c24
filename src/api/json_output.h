// Serializing JSON that leaves the process. Token text can hold bytes that are not valid UTF-8
// (a token may end inside a character), and nlohmann::json::dump throws on those by default;
// here they become U+FFFD instead, so a response can never fail to serialize.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace kiln::api {

inline std::string DumpJson(const nlohmann::json& j) {
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace kiln::api
