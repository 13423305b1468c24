// Asks the target which model it serves (GET /v1/models), as GuideLLM does when --model is not
// given; doubles as a reachability check before any load is sent.
#pragma once

#include <optional>
#include <string>

#include "http/client/http_client.h"

namespace kiln::bench {

struct DiscoveryResult {
  bool reachable = false;
  int status = 0;
  std::string error;                 // when not reachable
  std::optional<std::string> model;  // first data[].id, when the endpoint answered with one
};

// Runs `io` until the answer arrives (call before benchmarks start).
DiscoveryResult DiscoverModel(boost::asio::io_context& io, http::HttpClient& client,
                              const std::string& models_path,
                              const std::vector<std::pair<std::string, std::string>>& headers);

}  // namespace kiln::bench
