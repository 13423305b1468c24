// `kiln serve`: loads one model and serves the TGI- and OpenAI-compatible HTTP API.
#pragma once

#include <CLI/CLI.hpp>

namespace kiln {

void AddServeCommand(CLI::App& app);

}  // namespace kiln
