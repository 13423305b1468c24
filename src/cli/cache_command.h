// `kiln cache list|verify|prune`: inspect, check and trim the compiled-model cache
// (export/model_cache.h) that `kiln serve --model-id SOURCE` fills.
#pragma once

#include <CLI/CLI.hpp>

namespace kiln {

void AddCacheCommand(CLI::App& app);

}  // namespace kiln
