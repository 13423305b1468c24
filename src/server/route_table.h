// Dispatches requests to routes: method and path lookup (404/405), API-key auth (401, every
// route but /health and /ping), CORS (only when origins are configured), and the translation
// of errors thrown by a route into its wire shape, counted in the metrics.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "http/exchange.h"
#include "http/http_types.h"
#include "server/routes.h"
#include "server/server_state.h"

namespace kiln {

class RouteTable {
 public:
  explicit RouteTable(ServerState& state);
  void Handle(http::Request request, std::shared_ptr<http::Exchange> exchange);
  // Answers `error` (after the API-key check, which wins) as a route of `style` would.
  void Reject(http::Request request, std::shared_ptr<http::Exchange> exchange,
              const api::ApiError& error, ErrorStyle style);

 private:
  struct Route {
    std::string method;  // GET or POST; HEAD is served by GET routes
    std::string path;
    bool public_route;  // open even with an API key
    bool generation;    // counted in tgi_request_count / failure
    ErrorStyle style;
    void (*handler)(RouteContext&);
  };
  http::Headers CorsHeaders(const http::Request& request) const;
  bool Authorized(const http::Request& request) const;
  void Run(const Route& route, RouteContext& ctx);

  ServerState& state_;
  std::vector<Route> routes_;
};

}  // namespace kiln
