// `kiln top`: polls the /v1/status of Kiln servers and shows them live (ncurses), or prints one
// snapshot (--once, plain text or --json) for scripts.
#pragma once

#include <string>
#include <vector>

namespace kiln::top {

struct TopOptions {
  std::vector<std::string> targets;  // base URLs: http://host:port
  double interval_s = 1.0;
  bool once = false;
  bool json = false;
  std::string api_key;
  bool color = true;
};

// Returns the exit code: 0, or for --once 1 when no target is an answering Kiln server.
int RunTop(const TopOptions& options);

}  // namespace kiln::top
