// `kiln generate`: one prompt from the command line, greedy, for checks and scripts.
#pragma once

#include <CLI/CLI.hpp>

namespace kiln {

void AddGenerateCommand(CLI::App& app);

}  // namespace kiln
