#include "cli/top_command.h"

#include <memory>

#include "http/client/url.h"
#include "top/top.h"
#include "util/error.h"

namespace kiln {

void AddTopCommand(CLI::App& app) {
  auto o = std::make_shared<top::TopOptions>();
  CLI::App* cmd = app.add_subcommand(
      "top", "Live terminal monitor of Kiln servers: cores, memory, KV cache, tokens/s, latency");
  cmd->footer(
      "Polls GET /v1/status of each --target every --interval seconds. Keys: q quits, up/down/tab "
      "select a target. A target that is down shows 'unreachable' and is polled again; one that "
      "is not Kiln says so. --once prints one snapshot (two polls one interval apart, so rates "
      "are real) and exits 1 when no target is an answering Kiln server. Colours follow the "
      "terminal; set NO_COLOR to turn them off.");
  cmd->add_option("--target", o->targets,
                  "Base URL of a kiln serve (or kiln launch) server; repeat for several")
      ->default_str("http://127.0.0.1:3000");
  cmd->add_option("--interval", o->interval_s, "Seconds between polls")
      ->capture_default_str()
      ->check(CLI::Range(0.1, 3600.0));
  cmd->add_flag("--once", o->once, "Print one plain-text snapshot and exit");
  cmd->add_flag("--json", o->json, "With --once: print the snapshot as JSON");
  cmd->add_option("--api-key", o->api_key, "Sent as 'Authorization: Bearer KEY'")
      ->envname("API_KEY");
  cmd->add_flag("!--no-color", o->color, "No colours (also when NO_COLOR is set)");
  cmd->callback([o]() {
    if (o->targets.empty()) o->targets.push_back("http://127.0.0.1:3000");
    KILN_CHECK(!o->json || o->once, "--json needs --once (the live screen is not JSON)");
    for (const std::string& t : o->targets) http::ParseUrl(t);  // a typo fails now, not later
    const int code = top::RunTop(*o);
    if (code != 0) throw CLI::RuntimeError(code);
  });
}

}  // namespace kiln
