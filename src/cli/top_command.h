// `kiln top`: a live terminal monitor of Kiln servers (src/top/).
#pragma once

#include <CLI/CLI.hpp>

namespace kiln {

void AddTopCommand(CLI::App& app);

}  // namespace kiln
