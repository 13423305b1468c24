#include "bench/model_discovery.h"

#include <boost/asio/io_context.hpp>
#include <nlohmann/json.hpp>

namespace kiln::bench {

DiscoveryResult DiscoverModel(boost::asio::io_context& io, http::HttpClient& client,
                              const std::string& models_path,
                              const std::vector<std::pair<std::string, std::string>>& headers) {
  DiscoveryResult result;
  std::string body;
  http::ClientRequest request;
  request.method = "GET";
  request.target = models_path;
  request.headers = headers;
  http::StreamCallbacks cb;
  cb.on_body = [&body](std::string_view bytes, http::Clock::time_point) {
    if (body.size() < (1u << 20)) body.append(bytes);
  };
  cb.on_end = [&result](const http::StreamOutcome& outcome) {
    result.reachable = outcome.end == http::StreamEnd::kComplete;
    result.status = outcome.status;
    result.error = outcome.error;
  };
  client.Start(std::move(request), std::move(cb));
  io.restart();
  io.run();
  if (!result.reachable || result.status != 200) return result;
  nlohmann::json j = nlohmann::json::parse(body, nullptr, false);
  if (j.is_object() && j.contains("data") && j["data"].is_array() && !j["data"].empty()) {
    const auto& first = j["data"][0];
    if (first.is_object() && first.contains("id") && first["id"].is_string()) {
      result.model = first["id"].get<std::string>();
    }
  }
  return result;
}

}  // namespace kiln::bench
