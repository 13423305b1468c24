// libFuzzer target for what the `kiln launch` router reads itself: a client's request body
// (the prompt prefix key of --prefix-affinity, taken before any replica validated the body),
// a replica's /metrics text (merged into the router's) and a --core-sets value.
// What must hold: no crash, no exception but kiln::Error from the core sets; a key for equal
// prefixes is equal; every merged sample line carries the replica label.
//
// Run: KILN_FUZZ_TARGETS=router_input scripts/fuzz.sh
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz_util.h"
#include "router/core_split.h"
#include "util/metrics_merge.h"
#include "router/prefix_key.h"
#include "util/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const auto key = kiln::PromptPrefixKey(input, 64);
  FUZZ_CHECK(key == kiln::PromptPrefixKey(input, 64));

  kiln::MetricsMerger merger;
  merger.Add(input, "replica", "0");
  const std::string merged = merger.Render();
  std::string_view rest = merged;
  while (!rest.empty()) {
    const size_t eol = rest.find('\n');
    FUZZ_CHECK(eol != std::string_view::npos);
    const std::string_view line = rest.substr(0, eol);
    rest.remove_prefix(eol + 1);
    if (line.rfind("# ", 0) == 0) continue;
    const size_t name_end = line.find_first_of("{ ");
    FUZZ_CHECK(name_end == std::string_view::npos ||
               line.substr(name_end).rfind("{replica=\"0\"", 0) == 0);
  }

  if (size < 256) {
    try {
      kiln::ParseCoreSets(input);
    } catch (const kiln::Error&) {
    }
  }
  return 0;
}
