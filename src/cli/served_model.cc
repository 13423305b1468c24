#include "cli/served_model.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <thread>

#include "export/exporter.h"
#include "export/model_cache.h"
#include "formats/gguf.h"
#include "formats/kiln_artifact.h"
#include "tokenizer/load_tokenizer.h"
#include "util/error.h"
#include "util/log.h"

namespace kiln {
namespace {

int VerifyThreads() {
  return static_cast<int>(std::clamp(std::thread::hardware_concurrency(), 1u, 8u));
}

}  // namespace

std::unique_ptr<Tokenizer> FindModelTokenizer(const Model& model, const std::string& path) {
  if (model.gguf() != nullptr) return Tokenizer::FromGguf(*model.gguf());
  const ArtifactFile* artifact = model.artifact();
  if (artifact == nullptr) return HasHfTokenizer(path) ? LoadTokenizer(path) : nullptr;
  const std::optional<std::string_view> json = artifact->Blob("tokenizer.json");
  if (!json) return nullptr;
  return Tokenizer::FromHfJson(std::string(*json),
                               std::string(artifact->Blob("tokenizer_config.json").value_or("")),
                               path + ":tokenizer.json");
}

namespace {

nlohmann::json ArtifactInfo(const ArtifactFile& a, const CacheLookup* cached) {
  const ArtifactManifest& m = a.manifest();
  nlohmann::json j = {
      {"path", a.path()},
      {"format_version", m.format_version},
      {"kiln_version", m.kiln_version},
      {"target", m.target},
      {"dtype", m.dtype},
      {"batch_size", m.batch_size},
      {"sequence_length", m.sequence_length},
      {"source", m.source_path},
      {"source_digest", m.source_digest},
      {"created", m.created},
      {"cache", cached != nullptr ? (cached->exported ? "exported" : "hit") : "none"}};
  return j;
}

// Empty when the cache folder exists (or can be made) and is writable, else why not.
std::string CacheUnusableReason(const std::string& root) {
  std::error_code ec;
  std::filesystem::create_directories(root, ec);
  if (ec) return ec.message();
  if (::access(root.c_str(), W_OK) != 0) return std::strerror(errno);
  return "";
}

double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

ServedModel LoadServedModel(const std::string& source, const ModelSourceOptions& o) {
  const auto start = std::chrono::steady_clock::now();
  ServedModel s;
  CacheLookup lookup;
  const std::string root =
      o.cache_dir.empty() ? ModelCache::DefaultRoot(hub::ProcessEnv()) : o.cache_dir;
  bool cached = !o.no_model_cache && !IsArtifactFile(source);
  if (cached) {
    // A read-only home or container: serve from the source, as without a cache.
    if (const std::string why = CacheUnusableReason(root); !why.empty()) {
      KILN_CHECK(o.dtype == "source", "--dtype ", o.dtype, " needs the model cache, but ", root,
                 " is not writable: ", why, " (set KILN_CACHE or --model-cache)");
      log::Warn(StrCat("model cache ", root, " is not writable (", why, "); loading ", source,
                       " itself (set KILN_CACHE or --model-cache to cache its export)"));
      cached = false;
    }
  }
  if (!cached) {
    KILN_CHECK(o.dtype == "source" || IsArtifactFile(source), "--dtype ", o.dtype,
               " converts through the model cache: drop --no-model-cache");
    s.path = source;
    s.model = Model::Load(source, VerifyThreads());
  } else {
    ExportOptions eo;
    eo.dtype = o.dtype;
    eo.target = o.target;
    CheckExportDType(eo.dtype);
    ModelCache cache(root);
    lookup = cache.GetOrExport(source, eo, [&](const std::string& path) {
      s.path = path;
      s.model = Model::Load(path, VerifyThreads());
    });
    log::Info(StrCat("mapped ", lookup.path, lookup.exported ? " (exported now)" : " (cached)"));
  }
  const double model_seconds = SecondsSince(start);
  s.tokenizer = FindModelTokenizer(*s.model, s.path);
  if (s.tokenizer == nullptr) {
    KILN_CHECK(s.model->artifact() == nullptr, s.path,
               ": the artifact has no tokenizer.json (its source folder had none)");
    s.tokenizer = LoadTokenizer(s.path);  // throws saying what is missing
  }
  log::Info(StrCat("model ready in ", model_seconds, " s, tokenizer in ",
                   SecondsSince(start) - model_seconds, " s"));
  if (s.model->artifact() != nullptr) {
    s.artifact_info = ArtifactInfo(*s.model->artifact(), cached ? &lookup : nullptr);
  }
  return s;
}

void AddModelSourceFlags(CLI::App* cmd, ModelSourceOptions& o) {
  cmd->add_option("--dtype", o.dtype,
                  "Weights' type the model is exported to in the model cache: source, f32, f16, "
                  "bf16, q8_0, q4_0 or q4_1 (see kiln export --help)")
      ->envname("KILN_DTYPE")
      ->capture_default_str();
  cmd->add_option("--target", o.target,
                  "Kernels target of the cache entry: native or a name from kiln export --help")
      ->envname("KILN_TARGET")
      ->capture_default_str();
  cmd->add_flag("--no-model-cache", o.no_model_cache,
                "Load the source itself (converting and packing weights at every start) instead "
                "of exporting it once into the model cache and mapping the artifact")
      ->envname("KILN_NO_MODEL_CACHE");
  cmd->add_option("--model-cache", o.cache_dir,
                  "Model cache folder (default: $KILN_CACHE, $XDG_CACHE_HOME/kiln or "
                  "~/.cache/kiln)");
}

int64_t WeightFileBytes(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::is_regular_file(path, ec)) {
    const auto size = fs::file_size(path, ec);
    return ec ? 0 : static_cast<int64_t>(size);
  }
  int64_t total = 0;
  for (const auto& entry : fs::directory_iterator(path, ec)) {
    const std::string ext = entry.path().extension().string();
    if (ext != ".safetensors" && ext != ".gguf") continue;
    const auto size = fs::file_size(entry.path(), ec);
    if (!ec) total += static_cast<int64_t>(size);
  }
  return total;
}

}  // namespace kiln
