// `kiln export SOURCE -o OUT`: a model compiled once into a Kiln artifact that `kiln serve`
// maps and starts from without converting or repacking weights (export/exporter.h).
#pragma once

#include <CLI/CLI.hpp>

namespace kiln {

void AddExportCommand(CLI::App& app);

}  // namespace kiln
