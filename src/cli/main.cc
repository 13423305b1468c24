// kiln: LLM inference server for CPUs. Subcommands are wired here; logic lives in the layers.
#include <CLI/CLI.hpp>
#include <cstdio>

#include "cli/bench_command.h"
#include "cli/generate_command.h"
#include "cli/launch_command.h"
#include "cli/serve_command.h"
#include "util/error.h"

int main(int argc, char** argv) {
  CLI::App app{
      "Kiln: LLM inference for CPUs (generate, serve, launch, bench; export and top are on "
      "the way)",
      "kiln"};
  app.set_version_flag("--version", "kiln 0.1.0");
  app.require_subcommand(1);
  kiln::AddGenerateCommand(app);
  kiln::AddServeCommand(app);
  kiln::AddBenchCommand(app);
  kiln::AddLaunchCommand(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const kiln::Error& e) {
    std::fprintf(stderr, "kiln: error: %s\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "kiln: internal error: %s\n", e.what());
    return 2;
  }
  return 0;
}
