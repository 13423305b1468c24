// `kiln generate`: one prompt, or a JSONL batch, through the engine, for checks and scripts.
#pragma once

#include <CLI/CLI.hpp>

namespace kiln {

void AddGenerateCommand(CLI::App& app);

}  // namespace kiln
