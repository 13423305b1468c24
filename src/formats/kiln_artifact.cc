#include "formats/kiln_artifact.h"

#include <xxhash.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <fstream>
#include <thread>

namespace kiln {
namespace {

[[noreturn]] void Fail(const std::string& where, const std::string& what) {
  throw ArtifactError(StrCat(where, ": ", what));
}

ArtifactHeader ReadHeader(const uint8_t* data, size_t size, const std::string& where) {
  ArtifactHeader h{};
  if (size < sizeof(ArtifactHeader)) {
    Fail(where, StrCat("truncated: ", size, " bytes, shorter than the artifact header"));
  }
  std::memcpy(&h, data, sizeof(h));
  if (std::memcmp(h.magic, kArtifactMagic, sizeof(kArtifactMagic)) != 0) {
    Fail(where, "not a Kiln artifact (wrong magic; `kiln export` writes them)");
  }
  if (h.format_version == 0 || h.format_version > kArtifactFormatVersion) {
    Fail(where,
         StrCat("artifact format version ", h.format_version, " is newer than this kiln reads (",
                kArtifactFormatVersion, "): upgrade kiln or export the model again with this one"));
  }
  if (h.header_bytes != kArtifactPageBytes) {
    Fail(where, StrCat("header size ", h.header_bytes, " (expected ", kArtifactPageBytes, ")"));
  }
  if (h.file_bytes != size) {
    Fail(where, h.file_bytes > size ? StrCat("truncated: ", size, " of ", h.file_bytes, " bytes")
                                    : StrCat(size - h.file_bytes,
                                             " bytes after the end the "
                                             "header records (",
                                             h.file_bytes, " bytes)"));
  }
  if (h.manifest_offset < h.header_bytes || h.manifest_offset > size ||
      h.manifest_bytes > size - h.manifest_offset) {
    Fail(where, StrCat("manifest range [", h.manifest_offset, ", +", h.manifest_bytes,
                       ") is outside the file of ", size, " bytes"));
  }
  return h;
}

// Every region lies in [header, manifest), starts on a page and overlaps no other.
void CheckRegions(const ArtifactManifest& m, const ArtifactHeader& h, const std::string& where) {
  struct Span {
    uint64_t begin, end;
    const std::string* name;
  };
  std::vector<Span> spans;
  std::map<std::string, int> names;
  const auto add = [&](const ArtifactRegion& r, const char* kind) {
    if (r.name.empty()) Fail(where, StrCat("a ", kind, " has an empty name"));
    if (names[StrCat(kind, ":", r.name)]++ > 0) {
      Fail(where, StrCat("two ", kind, "s named '", r.name, "'"));
    }
    if (r.offset % kArtifactPageBytes != 0) {
      Fail(where, StrCat(kind, " '", r.name, "' offset ", r.offset, " is not page-aligned"));
    }
    if (r.offset < h.header_bytes || r.offset > h.manifest_offset ||
        r.bytes > h.manifest_offset - r.offset) {
      Fail(where, StrCat(kind, " '", r.name, "' range [", r.offset, ", +", r.bytes,
                         ") is out of range (data lies in [", h.header_bytes, ", ",
                         h.manifest_offset, "))"));
    }
    if (r.bytes > 0) spans.push_back({r.offset, r.offset + r.bytes, &r.name});
  };
  for (const ArtifactTensor& t : m.tensors) add(t, "tensor");
  for (const ArtifactRegion& b : m.blobs) add(b, "blob");
  std::sort(spans.begin(), spans.end(),
            [](const Span& a, const Span& b) { return a.begin < b.begin; });
  for (size_t i = 1; i < spans.size(); ++i) {
    if (spans[i].begin < spans[i - 1].end) {
      Fail(where, StrCat("regions '", *spans[i - 1].name, "' and '", *spans[i].name, "' overlap"));
    }
  }
}

void CheckTensorSizes(const ArtifactManifest& m, const std::string& where) {
  for (const ArtifactTensor& t : m.tensors) {
    uint64_t elems = 1;
    for (int64_t d : t.shape) {
      if (__builtin_mul_overflow(elems, static_cast<uint64_t>(d), &elems)) {
        Fail(where, StrCat("tensor '", t.name, "' has too many elements"));
      }
    }
    const std::optional<uint64_t> stored = BytesForElements(t.dtype, elems);
    const uint64_t cols = static_cast<uint64_t>(t.shape.back());
    if (!stored || !BytesForElements(t.dtype, cols)) {
      Fail(where, StrCat("tensor '", t.name, "': its last dimension ", cols,
                         " is not a whole number of ", GetDTypeInfo(t.dtype).name, " blocks"));
    }
    if (t.layout == ArtifactLayout::kStored && t.bytes != *stored) {
      Fail(where, StrCat("tensor '", t.name, "' has ", t.bytes, " bytes; its shape and dtype take ",
                         *stored));
    }
    if (t.layout == ArtifactLayout::kPacked && (t.bytes == 0 || t.shape.size() != 2)) {
      Fail(where, StrCat("packed tensor '", t.name, "' must be a non-empty matrix"));
    }
  }
}

}  // namespace

ArtifactManifest ParseArtifact(const uint8_t* data, size_t size, const std::string& where) {
  const ArtifactHeader h = ReadHeader(data, size, where);
  const uint8_t* manifest = data + h.manifest_offset;
  if (Xxh3(manifest, h.manifest_bytes) != h.manifest_checksum) {
    Fail(where, "manifest checksum mismatch (the file is damaged)");
  }
  ArtifactManifest m = ManifestFromJson(
      std::string_view(reinterpret_cast<const char*>(manifest), h.manifest_bytes), where);
  if (m.format_version != h.format_version) {
    Fail(where, StrCat("header says format version ", h.format_version, ", manifest says ",
                       m.format_version));
  }
  CheckTensorSizes(m, where);
  CheckRegions(m, h, where);
  return m;
}

ArtifactFile::ArtifactFile(const std::string& path) : file_(std::make_shared<MappedFile>(path)) {
  manifest_ = ParseArtifact(file_->data(), file_->size(), path);
  views_.reserve(manifest_.tensors.size());
  for (const ArtifactTensor& t : manifest_.tensors) {
    TensorView v;
    v.name = t.name;
    v.dtype = t.dtype;
    v.shape = t.shape;
    uint64_t elems = 1;
    for (int64_t d : t.shape) elems *= static_cast<uint64_t>(d);
    v.nbytes = *BytesForElements(t.dtype, elems);
    const uint8_t* at = file_->data() + t.offset;
    if (t.layout == ArtifactLayout::kPacked) {
      v.packed = at;
      v.packed_bytes = t.bytes;
    } else {
      v.data = at;
    }
    index_[t.name] = views_.size();
    views_.push_back(std::move(v));
  }
}

const ArtifactRegion* ArtifactFile::FindBlob(const std::string& name) const {
  for (const ArtifactRegion& b : manifest_.blobs) {
    if (b.name == name) return &b;
  }
  return nullptr;
}

std::optional<std::string_view> ArtifactFile::Blob(const std::string& name) const {
  const ArtifactRegion* b = FindBlob(name);
  if (b == nullptr) return std::nullopt;
  return std::string_view(reinterpret_cast<const char*>(file_->data() + b->offset), b->bytes);
}

void ArtifactFile::VerifyChecksums(int threads) const {
  std::vector<RegionJob> jobs;
  for (const ArtifactTensor& t : manifest_.tensors) jobs.push_back({&t, nullptr});
  for (const ArtifactRegion& b : manifest_.blobs) jobs.push_back({&b, nullptr});
  RunRegionJobs(jobs, threads, /*verify=*/true);
}

void ArtifactFile::CopyPackedToHugePages(int threads, bool verify) {
  uint64_t total = 0;
  std::vector<uint64_t> at(manifest_.tensors.size(), 0);
  for (size_t i = 0; i < manifest_.tensors.size(); ++i) {
    if (manifest_.tensors[i].layout != ArtifactLayout::kPacked) continue;
    at[i] = total;
    total += (manifest_.tensors[i].bytes + 63) / 64 * 64;  // kernels want 64-byte alignment
  }
  packed_copy_ = HugeBuffer(total);
  std::vector<RegionJob> jobs;
  for (size_t i = 0; i < manifest_.tensors.size(); ++i) {
    const ArtifactTensor& t = manifest_.tensors[i];
    const bool packed = t.layout == ArtifactLayout::kPacked;
    if (packed || verify) jobs.push_back({&t, packed ? packed_copy_.data() + at[i] : nullptr});
  }
  if (verify) {
    for (const ArtifactRegion& b : manifest_.blobs) jobs.push_back({&b, nullptr});
  }
  RunRegionJobs(jobs, threads, verify);
  for (size_t i = 0; i < manifest_.tensors.size(); ++i) {
    if (manifest_.tensors[i].layout == ArtifactLayout::kPacked) {
      views_[i].packed = packed_copy_.data() + at[i];
    }
  }
}

void ArtifactFile::RunRegionJobs(std::vector<RegionJob>& jobs, int threads, bool verify) const {
  // Largest first, so that the threads finish together.
  std::sort(jobs.begin(), jobs.end(), [](const RegionJob& a, const RegionJob& b) {
    return a.region->bytes > b.region->bytes;
  });
  std::atomic<size_t> next{0};
  std::atomic<const ArtifactRegion*> bad{nullptr};
  const auto work = [&] {
    XXH3_state_t* state = XXH3_createState();
    for (size_t i = next++; i < jobs.size() && bad.load() == nullptr; i = next++) {
      if (!CopyAndHash(jobs[i], verify, state)) bad.store(jobs[i].region);
    }
    XXH3_freeState(state);
  };
  std::vector<std::thread> pool;
  for (int t = 1; t < std::max(1, threads); ++t) pool.emplace_back(work);
  work();
  for (std::thread& t : pool) t.join();
  if (const ArtifactRegion* r = bad.load()) {
    Fail(path(), StrCat("checksum mismatch in '", r->name, "' (the file is damaged)"));
  }
}

// Copies the region to job.copy (when set) in chunks that stay in L2, hashing each chunk of the
// copy right after it is written; false on a checksum mismatch.
bool ArtifactFile::CopyAndHash(const RegionJob& job, bool verify, ::XXH3_state_s* state) const {
  const uint8_t* src = file_->data() + job.region->offset;
  const uint64_t bytes = job.region->bytes;
  if (job.copy == nullptr) return !verify || Xxh3(src, bytes) == job.region->checksum;
  constexpr uint64_t kChunk = 256 << 10;
  XXH3_64bits_reset(state);
  for (uint64_t done = 0; done < bytes; done += kChunk) {
    const uint64_t n = std::min(kChunk, bytes - done);
    std::memcpy(job.copy + done, src + done, n);
    if (verify) XXH3_64bits_update(state, job.copy + done, n);
  }
  return !verify || XXH3_64bits_digest(state) == job.region->checksum;
}

const TensorView* ArtifactFile::Find(const std::string& name) const {
  auto it = index_.find(name);
  return it == index_.end() ? nullptr : &views_[it->second];
}

std::vector<std::string> ArtifactFile::Names() const {
  std::vector<std::string> out;
  for (const TensorView& v : views_) out.push_back(v.name);
  return out;
}

bool IsArtifactFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  char magic[sizeof(kArtifactMagic)] = {};
  if (!in.read(magic, sizeof(magic))) return false;
  return std::memcmp(magic, kArtifactMagic, sizeof(magic)) == 0;
}

}  // namespace kiln
