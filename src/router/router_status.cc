// GET /v1/status of `kiln launch`: every replica's own /v1/status (fetched now, in parallel on
// the loop) with its index, port and state added, so `kiln top` shows each replica as a row.
#include <nlohmann/json.hpp>

#include "router/replica_router.h"

namespace kiln {

void ReplicaRouter::ServeStatus(const std::shared_ptr<http::Exchange>& exchange) {
  struct Gather {
    nlohmann::json replicas = nlohmann::json::array();
    size_t pending = 0;
    std::shared_ptr<http::Exchange> exchange;
  };
  auto gather = std::make_shared<Gather>();
  gather->exchange = exchange;
  auto finish = [gather] {
    nlohmann::json doc = {{"object", "kiln.router_status"},
                          {"router", "kiln-launch"},
                          {"replicas", gather->replicas}};
    http::Response r;
    r.content_type = "application/json";
    r.body = doc.dump();
    gather->exchange->Respond(std::move(r));
  };
  for (Replica& r : supervisor_->replicas()) {
    gather->replicas.push_back(
        {{"index", r.index}, {"port", r.port}, {"state", ReplicaStateName(r.state)}});
    if (!r.process || !r.probe) continue;
    ++gather->pending;
    FetchText(*r.probe, "/v1/status", config_.api_key,
              [gather, finish, index = r.index](int status, std::string body) {
                nlohmann::json& slot = gather->replicas[static_cast<size_t>(index)];
                nlohmann::json own = nlohmann::json::parse(body, nullptr, false);
                if (status == 200 && own.is_object()) {
                  own.update(slot);  // index, port and state are the router's
                  slot = std::move(own);
                }
                if (--gather->pending == 0) finish();
              });
  }
  if (gather->pending == 0) finish();
}

}  // namespace kiln
