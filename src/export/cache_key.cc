// ModelCache::DefaultRoot and ModelCache::KeyFor: where the cache lives and what names an entry.
#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "export/model_cache.h"
#include "formats/kiln_artifact.h"
#include "kernels/target.h"
#include "util/error.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;

constexpr size_t kMaxStemChars = 48;

std::optional<std::string> NonEmpty(const hub::GetEnv& env, const char* name) {
  std::optional<std::string> value = env(name);
  if (value && value->empty()) return std::nullopt;
  return value;
}

// [A-Za-z0-9._-] only, no leading '.' or '-' (hidden files, flags), at most kMaxStemChars.
std::string Sanitize(const std::string& text) {
  std::string out;
  for (char c : text) {
    const bool ok = std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-';
    if (out.empty() && (c == '.' || c == '-')) continue;
    out += ok ? c : '_';
    if (out.size() == kMaxStemChars) break;
  }
  return out.empty() ? "model" : out;
}

// The file's stem, or the folder's name; for a Hugging Face snapshot
// (models--{org}--{name}/snapshots/{commit}) the model's name rather than the commit.
std::string SourceStem(const fs::path& source, bool is_dir) {
  if (!is_dir) return source.stem().string();
  fs::path p = fs::absolute(source).lexically_normal();
  if (p.filename().empty()) p = p.parent_path();
  const fs::path parent = p.parent_path();
  const std::string repo = parent.parent_path().filename().string();
  if (parent.filename() == "snapshots" && repo.rfind("models--", 0) == 0) {
    return repo.substr(repo.rfind("--") + 2);
  }
  return p.filename().string();
}

// The files whose identity makes the key: a GGUF file itself; a folder's weights and JSON
// files (config, tokenizer, generation config), by name.
std::vector<fs::path> SourceFiles(const fs::path& source, bool is_dir) {
  if (!is_dir) return {source};
  std::vector<fs::path> files;
  for (const fs::directory_entry& e : fs::directory_iterator(source)) {
    const fs::path ext = e.path().extension();
    if ((ext == ".safetensors" || ext == ".json") && e.is_regular_file()) {
      files.push_back(e.path());
    }
  }
  std::sort(files.begin(), files.end());
  KILN_CHECK(!files.empty(), source.string(), ": no *.safetensors or *.json files in the folder");
  return files;
}

// "canonical path, size, mtime in ns": a changed file (or a new Hub revision, whose snapshot
// links point at other blobs) makes another key without reading the weights.
std::string FileIdentity(const fs::path& file) {
  std::error_code ec;
  const fs::path canonical = fs::canonical(file, ec);
  KILN_CHECK(!ec, file.string(), ": cannot resolve: ", ec.message());
  struct stat st {};
  KILN_CHECK(::stat(canonical.c_str(), &st) == 0, canonical.string(),
             ": cannot stat: ", std::strerror(errno));
  const int64_t mtime_ns =
      static_cast<int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec;
  return StrCat("file ", canonical.string(), '\0', static_cast<int64_t>(st.st_size), " ", mtime_ns,
                "\n");
}

}  // namespace

std::string ModelCache::DefaultRoot(const hub::GetEnv& env) {
  if (auto v = NonEmpty(env, "KILN_CACHE")) return hub::ExpandUser(*v, env);
  if (auto v = NonEmpty(env, "XDG_CACHE_HOME")) {
    return (fs::path(hub::ExpandUser(*v, env)) / "kiln").string();
  }
  return hub::ExpandUser("~/.cache/kiln", env);
}

std::string ModelCache::KeyFor(const std::string& source, const ExportOptions& options) const {
  std::error_code ec;
  const fs::path src(source);
  const bool is_dir = fs::is_directory(src, ec);
  KILN_CHECK(is_dir || fs::is_regular_file(src, ec), source, ": no such file or directory");
  const std::string target = options.target == "native" ? kernels::NativeTarget() : options.target;
  std::string identity =
      StrCat("kiln model cache key\nformat ", kArtifactFormatVersion, "\ndtype ", options.dtype,
             "\ntarget ", target, "\nbatch_size ", options.batch_size, "\nsequence_length ",
             options.sequence_length, "\n");
  for (const fs::path& f : SourceFiles(src, is_dir)) identity += FileIdentity(f);
  return StrCat(Sanitize(SourceStem(src, is_dir)), "-", Sanitize(options.dtype), "-",
                Sanitize(target), "-", ChecksumHex(Xxh3(identity.data(), identity.size())));
}

}  // namespace kiln
