// libFuzzer target for the safetensors reader: 8-byte header length, JSON header, dtypes,
// shapes and data_offsets. What must hold: any file ends in a SafetensorsFile or a kiln::Error,
// never a crash, hang or leak; an accepted file's tensors have a byte size that matches shape
// x dtype and tile the data section exactly (no overlap, no hole; with tensors of a skipped
// type, no overlap), and are found by name.
//
// The input is the whole file, written to a memfd that the reader maps like any file.
// Run: KILN_FUZZ_TARGETS=safetensors scripts/fuzz.sh
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "formats/safetensors.h"
#include "fuzz_util.h"
#include "util/dtype.h"
#include "util/error.h"

namespace {

void CheckTensors(const kiln::SafetensorsFile& st, const uint8_t* data, size_t size) {
  uint64_t header = 0;
  std::memcpy(&header, data, 8);
  const uint64_t data_size = size - 8 - header;
  std::vector<std::pair<const uint8_t*, uint64_t>> spans;
  uint64_t total = 0;
  for (const std::string& name : st.Names()) {
    const kiln::TensorView* t = st.Find(name);
    FUZZ_CHECK(t != nullptr && t->name == name);
    for (int64_t d : t->shape) FUZZ_CHECK(d >= 0);
    const std::optional<uint64_t> nbytes =
        kiln::BytesForElements(t->dtype, static_cast<uint64_t>(t->NumElements()));
    FUZZ_CHECK(nbytes && *nbytes == t->nbytes);
    if (t->nbytes > 0) spans.emplace_back(t->data, t->nbytes);
    total += t->nbytes;
  }
  // Tensors of types Kiln skips (I64, BOOL, ...) take their share of the data section but are
  // not served: then the served ones only must not overlap.
  const bool all_served = st.skipped().empty();
  FUZZ_CHECK(all_served ? total == data_size : total <= data_size);
  for (const std::string& skipped : st.skipped()) {
    FUZZ_CHECK(st.Find(skipped.substr(0, skipped.rfind(" ("))) == nullptr);
  }
  std::sort(spans.begin(), spans.end());
  for (size_t i = 1; i < spans.size(); ++i) {
    const uint8_t* end = spans[i - 1].first + spans[i - 1].second;
    FUZZ_CHECK(all_served ? end == spans[i].first : end <= spans[i].first);
  }
  volatile uint8_t sink = 0;  // touch the first and last byte of each tensor
  for (const auto& [p, n] : spans) sink = sink + p[0] + p[n - 1];
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = kiln::fuzz::WriteInputFile(data, size);
  try {
    kiln::SafetensorsFile st(path);
    CheckTensors(st, data, size);
  } catch (const kiln::Error&) {
  }
  return 0;
}
