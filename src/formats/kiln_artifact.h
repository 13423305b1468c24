// The Kiln artifact: what `kiln export` writes and `kiln serve` maps. One file:
//
//   [0, 4096)            header: magic "KILNART\0", format version, where the manifest is, the
//                        file's size and the manifest's checksum (ArtifactHeader)
//   page-aligned regions tensors (weights, in the layout the kernels read on the artifact's
//                        target, or as stored) and blobs (config.json, tokenizer.json, ...)
//   manifest             JSON, last: options, target, source, shape envelope, and every
//                        region's name, type, shape, offset, size and XXH3-64 checksum
//
// Every region starts on a 4096-byte page, so weights map straight into the kernels (no copy,
// no repacking at load). Reading validates the whole structure (magic, version, sizes, ranges,
// overlaps, types and shapes) before anything is used; checksums are verified on request.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "formats/tensor.h"
#include "util/dtype.h"
#include "util/error.h"
#include "util/huge_buffer.h"
#include "util/mmap_file.h"

struct XXH3_state_s;  // xxhash.h

namespace kiln {

inline constexpr uint32_t kArtifactFormatVersion = 1;  // the newest version this build reads
inline constexpr uint64_t kArtifactPageBytes = 4096;
inline constexpr char kArtifactMagic[8] = {'K', 'I', 'L', 'N', 'A', 'R', 'T', '\0'};
inline constexpr const char* kArtifactExtension = ".kiln";

// A malformed or unusable artifact (as opposed to I/O errors): `kiln` exits with code 3.
class ArtifactError : public Error {
 public:
  using Error::Error;
};

// The first bytes of the file, little-endian.
struct ArtifactHeader {
  char magic[8];
  uint32_t format_version;
  uint32_t header_bytes;  // kArtifactPageBytes
  uint64_t manifest_offset;
  uint64_t manifest_bytes;
  uint64_t file_bytes;         // the whole file: a shorter file is truncated
  uint64_t manifest_checksum;  // XXH3-64 of the manifest bytes
};
static_assert(sizeof(ArtifactHeader) == 48);

enum class ArtifactLayout {
  kStored,  // the dtype's own row layout (GGML blocks, f32/f16/bf16 rows)
  kPacked,  // kernels::PackMatrix's panels for the manifest's target
};

struct ArtifactRegion {
  std::string name;
  uint64_t offset = 0;
  uint64_t bytes = 0;
  uint64_t checksum = 0;  // XXH3-64
};

struct ArtifactTensor : ArtifactRegion {
  DType dtype = DType::kF32;
  std::vector<int64_t> shape;  // PyTorch order
  ArtifactLayout layout = ArtifactLayout::kStored;
};

struct ArtifactManifest {
  uint32_t format_version = kArtifactFormatVersion;
  std::string kiln_version;
  std::string name_scheme;  // tensor names: "huggingface" or "gguf"
  std::string target;       // kernels target the packed tensors are for (kernels/target.h)
  std::string dtype;        // weights' dtype option ("source": as stored in the source)
  int64_t batch_size = 0;   // static shape envelope; 0: none
  int64_t sequence_length = 0;
  std::string source_kind;    // "safetensors" or "gguf"
  std::string source_path;    // as given to `kiln export`
  std::string source_digest;  // "xxh3-128:<hex>" of the source's weight files
  uint64_t source_bytes = 0;
  std::string created;                  // UTC, ISO 8601
  std::vector<ArtifactTensor> tensors;  // in write order
  std::vector<ArtifactRegion> blobs;
};

std::string ManifestToJson(const ArtifactManifest& m);
// Validates field types; throws ArtifactError naming `where` and the field.
ArtifactManifest ManifestFromJson(std::string_view text, const std::string& where);

uint64_t Xxh3(const void* data, size_t bytes);
std::string ChecksumHex(uint64_t checksum);  // 16 lowercase hex digits

// Validates a whole artifact in memory (`data` [size] is the file) and returns its manifest:
// header, version, sizes, manifest checksum, every region inside the file, page-aligned, not
// overlapping another, and a tensor's bytes matching shape x dtype when stored. Throws
// ArtifactError naming `where`. Checksums of regions are not read here.
ArtifactManifest ParseArtifact(const uint8_t* data, size_t size, const std::string& where);

// A mapped, validated artifact: serves its tensors to model binding (stored tensors as
// TensorView::data, packed ones as TensorView::packed) and its blobs by name.
class ArtifactFile : public WeightSource {
 public:
  explicit ArtifactFile(const std::string& path);

  const ArtifactManifest& manifest() const { return manifest_; }
  const std::string& path() const { return file_->path(); }
  std::shared_ptr<const MappedFile> mapping() const { return file_; }

  // A blob's bytes (inside the mapping), nullopt when absent.
  std::optional<std::string_view> Blob(const std::string& name) const;
  const ArtifactRegion* FindBlob(const std::string& name) const;

  // Recomputes every region's checksum on up to `threads` threads; throws ArtifactError
  // naming the first region that does not match.
  void VerifyChecksums(int threads) const;

  // Copies every packed tensor out of the mapping into one buffer on transparent huge pages and
  // points its TensorView::packed there; with `verify`, checks each copy's checksum and every
  // other region's in place (as VerifyChecksums), all on up to `threads` threads. Why: decode
  // streams these panels, and from 4 KiB file pages it ran 2.8x slower (a TLB miss and a
  // prefetcher stop at every page) than from the huge pages a repacked model gets.
  void CopyPackedToHugePages(int threads, bool verify);

  // WeightSource
  const TensorView* Find(const std::string& name) const override;
  std::vector<std::string> Names() const override;
  std::string Describe() const override { return file_->path(); }

 private:
  struct RegionJob {
    const ArtifactRegion* region;
    uint8_t* copy;  // where to copy it, or nullptr (hash in place)
  };
  void RunRegionJobs(std::vector<RegionJob>& jobs, int threads, bool verify) const;
  bool CopyAndHash(const RegionJob& job, bool verify, ::XXH3_state_s* state) const;

  std::shared_ptr<const MappedFile> file_;
  ArtifactManifest manifest_;
  std::vector<TensorView> views_;
  HugeBuffer packed_copy_;
  std::map<std::string, size_t> index_;
};

// Whether `path` is a regular file that starts with the artifact magic.
bool IsArtifactFile(const std::string& path);

}  // namespace kiln
