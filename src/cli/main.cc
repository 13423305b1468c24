// kiln: LLM inference server for CPUs. Subcommands are wired here; logic lives in the layers.
#include <CLI/CLI.hpp>
#include <cstdio>

#include "cli/bench_command.h"
#include "cli/cache_command.h"
#include "cli/export_command.h"
#include "cli/generate_command.h"
#include "cli/launch_command.h"
#include "cli/serve_command.h"
#include "cli/top_command.h"
#include "formats/kiln_artifact.h"
#include "util/error.h"
#include "util/log.h"

namespace {

// The last word of a failed command: text as always, or a JSON log line under --json-output
// (every stderr line is then JSON).
void ReportFailure(const char* kind, const char* what) {
  if (kiln::log::CurrentFormat() == kiln::log::Format::kJson) {
    kiln::log::Write(kiln::log::Level::kError, "kiln", what, {{"error", std::string_view(kind)}});
  } else {
    std::fprintf(stderr, "kiln: %s: %s\n", kind, what);
  }
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Kiln: LLM inference for CPUs (generate, serve, launch, export, cache, bench, top)",
               "kiln"};
  app.set_version_flag("--version", "kiln " KILN_VERSION);
  app.require_subcommand(1);
  kiln::AddGenerateCommand(app);
  kiln::AddServeCommand(app);
  kiln::AddBenchCommand(app);
  kiln::AddLaunchCommand(app);
  kiln::AddExportCommand(app);
  kiln::AddCacheCommand(app);
  kiln::AddTopCommand(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const kiln::ArtifactError& e) {
    // A malformed or unusable Kiln artifact: its own code, so scripts can tell it apart.
    ReportFailure("error", e.what());
    return 3;
  } catch (const kiln::Error& e) {
    ReportFailure("error", e.what());
    return 1;
  } catch (const std::exception& e) {
    ReportFailure("internal error", e.what());
    return 2;
  }
  return 0;
}
