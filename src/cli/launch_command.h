// `kiln launch`: N data-parallel `kiln serve` replicas, each pinned to its own cores, behind
// one endpoint that balances, supervises and restarts them.
#pragma once

#include <CLI/CLI.hpp>

namespace kiln {

void AddLaunchCommand(CLI::App& app);

}  // namespace kiln
