// `kiln bench`: load benchmark of an OpenAI-compatible endpoint (GuideLLM's profiles, metrics
// and reports).
#pragma once

#include <CLI/CLI.hpp>

namespace kiln {

void AddBenchCommand(CLI::App& app);

}  // namespace kiln
