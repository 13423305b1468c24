#include "top/top.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <thread>

#include "top/host_info.h"
#include "top/poller.h"
#include "top/report.h"
#include "top/screen.h"
#include "util/error.h"

namespace kiln::top {
namespace {

// A poll waits at most one interval (so the screen keeps its pace), and at least long enough
// for a loaded server's answer.
std::chrono::milliseconds PollTimeout(std::chrono::milliseconds interval) {
  return std::clamp(interval, std::chrono::milliseconds(500), std::chrono::milliseconds(5000));
}

int Once(Poller& poller, const TopOptions& o, std::chrono::milliseconds interval) {
  // Two polls one interval apart: rates need a pair.
  poller.PollOnce();
  std::this_thread::sleep_for(interval);
  poller.PollOnce();
  const HostInfo host = ReadHostInfo();
  if (o.json) {
    std::printf("%s\n", JsonReport(host, poller.targets()).dump(2).c_str());
  } else {
    std::fputs(PlainReport(host, poller.targets()).c_str(), stdout);
  }
  for (const TargetView& t : poller.targets()) {
    if (t.health == Health::kUp) return 0;
  }
  return 1;
}

}  // namespace

int RunTop(const TopOptions& o) {
  const auto interval = std::chrono::milliseconds(static_cast<int64_t>(o.interval_s * 1000.0));
  Poller poller(o.targets, o.api_key, PollTimeout(interval));
  if (o.once) return Once(poller, o, interval);
  // initscr() on a pipe would print its own error and exit(); say what to use instead.
  KILN_CHECK(isatty(STDOUT_FILENO) && isatty(STDIN_FILENO),
             "kiln top needs a terminal; use --once (or --once --json) for a snapshot");
  RunScreen(poller, {interval, o.color});
  return 0;
}

}  // namespace kiln::top
