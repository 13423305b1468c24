#include "export/exporter.h"

#include <fcntl.h>
#include <unistd.h>
#include <xxhash.h>

#include <chrono>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <memory>
#include <set>

#include "export/packed_tensor.h"
#include "formats/gguf.h"
#include "formats/gguf_writer.h"
#include "formats/hf_config.h"
#include "formats/kiln_artifact_writer.h"
#include "formats/safetensors.h"
#include "kernels/target.h"
#include "model/config.h"
#include "model/weights.h"
#include "util/log.h"
#include "util/read_file.h"

#ifndef KILN_VERSION
#define KILN_VERSION "0.0.0"
#endif

namespace kiln {
namespace {

namespace fs = std::filesystem;

// The Hugging Face folder's files a served model needs besides its weights.
constexpr const char* kHfBlobs[] = {"config.json", "generation_config.json", "tokenizer.json",
                                    "tokenizer_config.json", "special_tokens_map.json"};

std::string UtcNow() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

// XXH3-128 over the weight files' bytes, in name order: what the artifact was made from.
std::string SourceDigest(const std::vector<fs::path>& files, uint64_t* total_bytes) {
  XXH3_state_t* state = XXH3_createState();
  KILN_CHECK(state != nullptr, "out of memory");
  XXH3_128bits_reset(state);
  std::vector<char> buf(4 << 20);
  *total_bytes = 0;
  for (const fs::path& f : files) {
    std::ifstream in(f, std::ios::binary);
    KILN_CHECK(in.good(), f.string(), ": cannot open");
    while (in) {
      in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
      XXH3_128bits_update(state, buf.data(), static_cast<size_t>(in.gcount()));
      *total_bytes += static_cast<uint64_t>(in.gcount());
    }
  }
  const XXH128_hash_t h = XXH3_128bits_digest(state);
  XXH3_freeState(state);
  return "xxh3-128:" + ChecksumHex(h.high64) + ChecksumHex(h.low64);
}

// The source opened: its tensors, config and the files the digest covers.
struct OpenedSource {
  std::unique_ptr<WeightSource> weights;
  const GgufFile* gguf = nullptr;
  ModelConfig config;
  NameScheme scheme = NameScheme::kHuggingFace;
  std::vector<fs::path> weight_files;
};

OpenedSource OpenSource(const std::string& source) {
  OpenedSource s;
  std::error_code ec;
  if (fs::is_directory(source, ec)) {
    s.config = ModelConfigFromHf(LoadHfConfig(source));
    s.weights = std::make_unique<SafetensorsCheckpoint>(source);
    for (const fs::directory_entry& e : fs::directory_iterator(source)) {
      if (e.path().extension() == ".safetensors") s.weight_files.push_back(e.path());
    }
    std::sort(s.weight_files.begin(), s.weight_files.end());
    return s;
  }
  KILN_CHECK(fs::is_regular_file(source, ec), source, ": no such file or directory");
  KILN_CHECK(!IsArtifactFile(source), source,
             ": already a Kiln artifact (export its source instead)");
  auto gguf = std::make_unique<GgufFile>(source);
  s.gguf = gguf.get();
  s.config = ModelConfigFromGguf(*gguf);
  s.scheme = NameScheme::kGguf;
  s.weights = std::move(gguf);
  s.weight_files.push_back(source);
  return s;
}

// The GGUF's metadata as a GGUF without tensors: config, tokenizer and chat template.
std::vector<uint8_t> GgufMetadataOnly(const GgufFile& gguf) {
  GgufWriter w(gguf.alignment());
  for (const auto& [key, value] : gguf.metadata()) {
    if (key != "general.alignment") w.Set(key, value);
  }
  return w.Serialize();
}

void AddBlobs(const OpenedSource& s, const std::string& source, ArtifactWriter& writer) {
  if (s.gguf != nullptr) {
    const std::vector<uint8_t> meta = GgufMetadataOnly(*s.gguf);
    writer.AddBlob("gguf-metadata",
                   std::string_view(reinterpret_cast<const char*>(meta.data()), meta.size()));
    return;
  }
  for (const char* name : kHfBlobs) {
    const fs::path p = fs::path(source) / name;
    std::error_code ec;
    if (fs::is_regular_file(p, ec)) writer.AddBlob(name, ReadFileText(p.string()));
  }
}

std::string ResolveTarget(const std::string& target) {
  const std::string name = target == "native" ? kernels::NativeTarget() : target;
  const std::string why = kernels::TargetUnsupportedReason(name);
  KILN_CHECK(why.empty(), "--target ", target, ": ", why);
  if (kernels::ActiveTarget() != name) kernels::UseTarget(name);
  return name;
}

void SyncParentDir(const fs::path& file) {
  const fs::path dir = file.has_parent_path() ? file.parent_path() : fs::path(".");
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;
  ::fsync(fd);
  ::close(fd);
}

}  // namespace

void CheckExportDType(const std::string& dtype) {
  static const std::set<std::string> kAccepted = {"source", "f32",  "f16", "bf16",
                                                  "q8_0",   "q4_0", "q4_1"};
  KILN_CHECK(kAccepted.count(dtype) > 0,
             "--dtype must be source, f32, f16, bf16, q8_0, q4_0 or "
             "q4_1, not '",
             dtype, "' (K-quants are kept as stored with --dtype source)");
}

ExportResult ExportModel(const std::string& source, const std::string& out,
                         const ExportOptions& o) {
  const auto start = std::chrono::steady_clock::now();
  CheckExportDType(o.dtype);
  KILN_CHECK(o.batch_size >= 0 && o.sequence_length >= 0,
             "--batch-size and --sequence-length must be >= 0");
  ExportResult result;
  result.target = ResolveTarget(o.target);
  OpenedSource s = OpenSource(source);
  KILN_CHECK(o.sequence_length <= s.config.max_position_embeddings, "--sequence-length ",
             o.sequence_length, " exceeds the model's context of ",
             s.config.max_position_embeddings, " tokens");
  BindWeights(*s.weights, s.config, s.scheme);  // every shape checked before writing

  const fs::path final_path(out);
  const fs::path tmp = final_path.string() + ".tmp-" + std::to_string(::getpid());
  try {
    ArtifactWriter writer(tmp.string());
    ArtifactManifest& m = writer.manifest();
    m.kiln_version = KILN_VERSION;
    m.name_scheme = s.scheme == NameScheme::kGguf ? "gguf" : "huggingface";
    m.target = result.target;
    m.dtype = o.dtype;
    m.batch_size = o.batch_size;
    m.sequence_length = o.sequence_length;
    m.source_kind = s.gguf != nullptr ? "gguf" : "safetensors";
    m.source_path = source;
    m.source_digest = SourceDigest(s.weight_files, &m.source_bytes);
    m.created = UtcNow();
    AddBlobs(s, source, writer);
    const PackedTensorCounts counts =
        WritePackedTensors(*s.weights, s.config, s.scheme, o.dtype, writer);
    result.tensors = counts.tensors;
    result.packed_tensors = counts.packed;
    writer.Finish();
    fs::rename(tmp, final_path);
    SyncParentDir(final_path);
  } catch (...) {
    std::error_code ec;
    fs::remove(tmp, ec);
    throw;
  }
  result.path = out;
  result.bytes = fs::file_size(final_path);
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return result;
}

}  // namespace kiln
