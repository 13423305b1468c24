// Polls GET /v1/status of every target once per call, all targets at once on one io_context,
// and keeps a TargetView per server: one per target, or one per replica when the target is a
// `kiln launch` router. Never throws for a target that is down or not Kiln: that is what the
// monitor has to show.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "top/target_view.h"

namespace kiln::top {

class Poller {
 public:
  // `urls` must parse (http::ParseUrl); `api_key` is sent as a bearer token when not empty.
  Poller(const std::vector<std::string>& urls, std::string api_key,
         std::chrono::milliseconds timeout);
  ~Poller();
  Poller(const Poller&) = delete;
  Poller& operator=(const Poller&) = delete;

  // One round: returns when every target answered, failed or ran past the timeout.
  void PollOnce();
  // Every row, in --target order (a router's replicas in index order).
  const std::vector<TargetView>& targets() const { return views_; }

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::vector<std::vector<TargetView>> rows_;  // per target
  std::vector<TargetView> views_;              // rows_ flattened
};

}  // namespace kiln::top
