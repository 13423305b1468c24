// libFuzzer target for the GGUF reader: header, metadata, tensor infos and tensor placement.
// What must hold: any file ends in a GgufFile or a kiln::Error, never a crash, hang or leak;
// an accepted file's tensors have a shape of 1..4 dims >= 0, a byte size that matches it, lie
// inside the data section, do not overlap, and are found by name; typed getters either convert
// or throw kiln::Error.
//
// The input is the whole file, written to a memfd that the reader maps like any file.
// Run: KILN_FUZZ_TARGETS=gguf scripts/fuzz.sh
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "formats/gguf.h"
#include "fuzz_util.h"
#include "util/dtype.h"
#include "util/error.h"

namespace {

void CheckTensors(const kiln::GgufFile& gguf, size_t file_size) {
  FUZZ_CHECK(gguf.data_offset() <= file_size || gguf.tensors().empty());
  const uint64_t data_size = gguf.tensors().empty() ? 0 : file_size - gguf.data_offset();
  std::vector<std::pair<const uint8_t*, const uint8_t*>> spans;
  for (const kiln::TensorView& t : gguf.tensors()) {
    FUZZ_CHECK(!t.shape.empty() && t.shape.size() <= 4);
    for (int64_t d : t.shape) FUZZ_CHECK(d >= 0);
    const std::optional<uint64_t> nbytes =
        kiln::BytesForElements(t.dtype, static_cast<uint64_t>(t.NumElements()));
    FUZZ_CHECK(nbytes && *nbytes == t.nbytes);
    FUZZ_CHECK(gguf.Find(t.name) == &t);
    if (t.nbytes > 0) spans.emplace_back(t.data, t.data + t.nbytes);
  }
  std::sort(spans.begin(), spans.end());
  for (size_t i = 1; i < spans.size(); ++i) FUZZ_CHECK(spans[i - 1].second <= spans[i].first);
  if (!spans.empty()) {
    // All tensors fit in a window as large as the data section (the mapping's base is private).
    const uint8_t* hi = spans[0].second;
    for (const auto& s : spans) hi = std::max(hi, s.second);
    FUZZ_CHECK(static_cast<uint64_t>(hi - spans[0].first) <= data_size);
    volatile uint8_t sink = 0;  // touch the first and last byte of each tensor
    for (const auto& s : spans) sink = sink + s.first[0] + s.second[-1];
  }
  FUZZ_CHECK(gguf.Names().size() == gguf.tensors().size());
}

// Every typed getter on every key: a value or a kiln::Error, nothing else.
void ReadMetadata(const kiln::GgufFile& gguf) {
  for (const auto& entry : gguf.metadata()) {
    const std::string& key = entry.first;
    kiln::GgufValueTypeName(entry.second);
    auto attempt = [](auto&& get) {
      try {
        get();
      } catch (const kiln::Error&) {
      }
    };
    attempt([&] { gguf.GetString(key); });
    attempt([&] { gguf.GetInt(key); });
    attempt([&] { gguf.GetFloat(key); });
    attempt([&] { gguf.GetBool(key); });
    attempt([&] { gguf.GetStringArray(key); });
    attempt([&] { gguf.GetFloatArray(key); });
    attempt([&] { gguf.GetIntArray(key); });
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = kiln::fuzz::WriteInputFile(data, size);
  try {
    kiln::GgufFile gguf(path);
    FUZZ_CHECK(gguf.version() == 2 || gguf.version() == 3);
    CheckTensors(gguf, size);
    ReadMetadata(gguf);
  } catch (const kiln::Error&) {
  }
  return 0;
}
