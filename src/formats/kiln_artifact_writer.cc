#include "formats/kiln_artifact_writer.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace kiln {

ArtifactWriter::ArtifactWriter(const std::string& path) : path_(path) {
  fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  KILN_CHECK(fd_ >= 0, path, ": cannot create: ", std::strerror(errno));
}

ArtifactWriter::~ArtifactWriter() {
  if (fd_ >= 0) ::close(fd_);
}

void ArtifactWriter::WriteAt(uint64_t offset, const void* data, uint64_t bytes) {
  const auto* p = static_cast<const uint8_t*>(data);
  while (bytes > 0) {
    const ssize_t n =
        ::pwrite(fd_, p, std::min<uint64_t>(bytes, 1 << 30), static_cast<off_t>(offset));
    if (n < 0 && errno == EINTR) continue;
    KILN_CHECK(n > 0, path_, ": write failed: ", std::strerror(errno));
    p += n;
    offset += static_cast<uint64_t>(n);
    bytes -= static_cast<uint64_t>(n);
  }
}

ArtifactRegion ArtifactWriter::WriteRegion(const std::string& name, const void* data,
                                           uint64_t bytes) {
  KILN_CHECK(!finished_, path_, ": region '", name, "' added after Finish");
  ArtifactRegion r;
  r.name = name;
  r.offset = end_;
  r.bytes = bytes;
  r.checksum = Xxh3(data, bytes);
  WriteAt(end_, data, bytes);
  end_ = (end_ + bytes + kArtifactPageBytes - 1) / kArtifactPageBytes * kArtifactPageBytes;
  return r;
}

void ArtifactWriter::AddTensor(const std::string& name, DType dtype, std::vector<int64_t> shape,
                               ArtifactLayout layout, const void* data, uint64_t bytes) {
  ArtifactTensor t;
  static_cast<ArtifactRegion&>(t) = WriteRegion(name, data, bytes);
  t.dtype = dtype;
  t.shape = std::move(shape);
  t.layout = layout;
  manifest_.tensors.push_back(std::move(t));
}

void ArtifactWriter::AddBlob(const std::string& name, std::string_view bytes) {
  manifest_.blobs.push_back(WriteRegion(name, bytes.data(), bytes.size()));
}

void ArtifactWriter::Finish() {
  KILN_CHECK(!finished_, path_, ": Finish called twice");
  finished_ = true;
  const std::string manifest = ManifestToJson(manifest_);
  ArtifactHeader h{};
  std::memcpy(h.magic, kArtifactMagic, sizeof(h.magic));
  h.format_version = manifest_.format_version;
  h.header_bytes = kArtifactPageBytes;
  h.manifest_offset = end_;
  h.manifest_bytes = manifest.size();
  h.file_bytes = end_ + manifest.size();
  h.manifest_checksum = Xxh3(manifest.data(), manifest.size());
  WriteAt(end_, manifest.data(), manifest.size());
  // The page-aligned gaps are holes; the header page is written whole.
  std::vector<uint8_t> page(kArtifactPageBytes, 0);
  std::memcpy(page.data(), &h, sizeof(h));
  WriteAt(0, page.data(), page.size());
  KILN_CHECK(::ftruncate(fd_, static_cast<off_t>(h.file_bytes)) == 0, path_,
             ": truncate failed: ", std::strerror(errno));
  KILN_CHECK(::fsync(fd_) == 0, path_, ": fsync failed: ", std::strerror(errno));
  KILN_CHECK(::close(fd_) == 0, path_, ": close failed: ", std::strerror(errno));
  fd_ = -1;
}

}  // namespace kiln
