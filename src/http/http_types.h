// A parsed HTTP request and a complete response, as the server's handler sees them.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace kiln::http {

using Headers = std::vector<std::pair<std::string, std::string>>;

struct Request {
  std::string method;  // as sent: "GET", "POST", ...
  std::string target;  // path and query, as sent
  std::string path;    // target without the query
  std::string query;   // after '?', without it
  Headers headers;     // names lower-cased
  std::string body;
  int version = 11;  // 10 or 11
  std::string client;  // the peer's "address:port" (access logs, traces)

  // Value of the first header named `lower_name`, or nullptr.
  const std::string* Header(std::string_view lower_name) const {
    for (const auto& [name, value] : headers) {
      if (name == lower_name) return &value;
    }
    return nullptr;
  }
};

struct Response {
  int status = 200;
  std::string content_type = "application/json";
  Headers headers;  // extra headers; Content-Length and Connection are added by the server
  std::string body;
};

}  // namespace kiln::http
