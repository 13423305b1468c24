// CPU core sets written like "0-3,6" (as taskset and NEURON_RT_VISIBLE_CORES do).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace kiln {

// Parses "0-3,6,8-9" into sorted unique core ids. Throws kiln::Error on bad syntax.
std::vector<int> ParseCoreSet(std::string_view spec);

// Cores this process may run on (sched_getaffinity), sorted.
std::vector<int> AllowedCores();

// Formats a sorted core list back into the compact "0-3,6" form.
std::string FormatCoreSet(const std::vector<int>& cores);

}  // namespace kiln
