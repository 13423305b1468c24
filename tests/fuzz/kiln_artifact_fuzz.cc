// libFuzzer target for the Kiln artifact reader (formats/kiln_artifact.h): header, manifest
// JSON and the region table. What must hold: any file ends in an ArtifactFile or a kiln::Error,
// never a crash, hang or leak; an accepted file's regions lie inside the file, page-aligned,
// without overlap, a stored tensor's size matches shape x dtype, and checksum verification
// either passes or throws.
//
// The input's manifest checksum is recomputed before reading (when its range is inside the
// input), so that mutations reach the manifest's checks instead of all stopping at the
// checksum. The input is written to a memfd that the reader maps like any file.
// Run: KILN_FUZZ_TARGETS=kiln_artifact scripts/fuzz.sh
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "formats/kiln_artifact.h"
#include "fuzz_util.h"
#include "util/error.h"

namespace {

std::vector<uint8_t> WithManifestChecksum(const uint8_t* data, size_t size) {
  std::vector<uint8_t> b(data, data + size);
  kiln::ArtifactHeader h{};
  if (size < sizeof(h)) return b;
  std::memcpy(&h, b.data(), sizeof(h));
  if (h.manifest_offset <= size && h.manifest_bytes <= size - h.manifest_offset) {
    h.manifest_checksum = kiln::Xxh3(b.data() + h.manifest_offset, h.manifest_bytes);
    std::memcpy(b.data(), &h, sizeof(h));
  }
  return b;
}

void CheckAccepted(const kiln::ArtifactFile& a, size_t size) {
  const uint8_t* base = a.mapping()->data();
  std::vector<std::pair<uint64_t, uint64_t>> spans;
  for (const kiln::ArtifactTensor& t : a.manifest().tensors) {
    FUZZ_CHECK(t.offset % kiln::kArtifactPageBytes == 0 && t.offset <= size &&
               t.bytes <= size - t.offset);
    const kiln::TensorView* v = a.Find(t.name);
    FUZZ_CHECK(v != nullptr);
    FUZZ_CHECK((v->data != nullptr) != (v->packed != nullptr));
    if (v->data != nullptr) FUZZ_CHECK(v->data == base + t.offset && v->nbytes == t.bytes);
    if (t.bytes > 0) spans.emplace_back(t.offset, t.offset + t.bytes);
  }
  for (const kiln::ArtifactRegion& b : a.manifest().blobs) {
    FUZZ_CHECK(b.offset <= size && b.bytes <= size - b.offset);
    FUZZ_CHECK(a.Blob(b.name).has_value());
    if (b.bytes > 0) spans.emplace_back(b.offset, b.offset + b.bytes);
  }
  std::sort(spans.begin(), spans.end());
  for (size_t i = 1; i < spans.size(); ++i) FUZZ_CHECK(spans[i - 1].second <= spans[i].first);
  try {
    a.VerifyChecksums(1);
  } catch (const kiln::ArtifactError&) {
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::vector<uint8_t> input = WithManifestChecksum(data, size);
  const std::string path = kiln::fuzz::WriteInputFile(input.data(), input.size());
  try {
    kiln::ArtifactFile a(path);
    CheckAccepted(a, input.size());
  } catch (const kiln::Error&) {
  }
  return 0;
}
