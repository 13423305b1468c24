// Writes a Kiln artifact (kiln_artifact.h) region by region: each tensor or blob is written at
// the next page boundary as it is added (so a multi-gigabyte model is never held in memory),
// with its checksum; Finish() appends the manifest, then writes the header, then fsyncs. The
// caller writes to a temporary name and renames it into place, so a reader never sees a
// partial artifact under the final name.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "formats/kiln_artifact.h"

namespace kiln {

class ArtifactWriter {
 public:
  // Creates (or truncates) `path`; throws kiln::Error on I/O failure.
  explicit ArtifactWriter(const std::string& path);
  ~ArtifactWriter();
  ArtifactWriter(const ArtifactWriter&) = delete;
  ArtifactWriter& operator=(const ArtifactWriter&) = delete;

  // Everything but the regions (which Add* records): options, source, target, version.
  ArtifactManifest& manifest() { return manifest_; }

  void AddTensor(const std::string& name, DType dtype, std::vector<int64_t> shape,
                 ArtifactLayout layout, const void* data, uint64_t bytes);
  void AddBlob(const std::string& name, std::string_view bytes);

  // Writes the manifest and header and syncs the file to disk. No Add* after it.
  void Finish();

 private:
  ArtifactRegion WriteRegion(const std::string& name, const void* data, uint64_t bytes);
  void WriteAt(uint64_t offset, const void* data, uint64_t bytes);

  std::string path_;
  int fd_ = -1;
  uint64_t end_ = kArtifactPageBytes;  // next free byte
  ArtifactManifest manifest_;
  bool finished_ = false;
};

}  // namespace kiln
