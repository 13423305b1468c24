#include "cli/cache_command.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "export/hf_cache_env.h"
#include "export/model_cache.h"
#include "formats/kiln_artifact.h"
#include "util/error.h"

namespace kiln {
namespace {

struct CacheFlags {
  std::string dir;
  bool json = false;
  bool remove_damaged = false;
  std::string max_size = "0";
};

std::string HumanBytes(uint64_t bytes) {
  static const char* const kUnits[] = {"KiB", "MiB", "GiB", "TiB", "PiB"};
  if (bytes < 1024) return StrCat(bytes, " B");
  double v = static_cast<double>(bytes) / 1024;
  size_t unit = 0;
  while (v >= 1024 && unit + 1 < std::size(kUnits)) {
    v /= 1024;
    ++unit;
  }
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1f %s", v, kUnits[unit]);
  return buf;
}

// "just now", "5 min ago", "3 h ago", "2 days ago", else the local date and time.
std::string LastUsed(int64_t when, int64_t now) {
  const int64_t ago = now - when;
  if (ago >= 0 && ago < 60) return "just now";
  if (ago >= 0 && ago < 3600) return StrCat(ago / 60, " min ago");
  if (ago >= 0 && ago < 86400) return StrCat(ago / 3600, " h ago");
  if (ago >= 0 && ago < 7 * 86400) {
    return StrCat(ago / 86400, ago < 2 * 86400 ? " day ago" : " days ago");
  }
  const std::time_t t = static_cast<std::time_t>(when);
  std::tm tm{};
  localtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%d %H:%M", &tm);
  return buf;
}

int64_t Now() { return static_cast<int64_t>(std::time(nullptr)); }

// Bytes, or a number (fractions allowed) with K, M, G or T (KiB, MiB, GiB, TiB; B allowed)
// meaning powers of 1024, any case: "0", "500M", "1.5GiB", "20g".
uint64_t ParseSize(const std::string& text) {
  const std::string bad = StrCat("--max-size '", text,
                                 "': expected bytes or a number with K, M, G or T (KiB, MiB, "
                                 "GiB, TiB: powers of 1024), e.g. 20G");
  size_t end = 0;
  while (end < text.size() &&
         (std::isdigit(static_cast<unsigned char>(text[end])) || text[end] == '.')) {
    ++end;
  }
  std::string suffix = text.substr(end);
  for (char& c : suffix) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  static const std::pair<const char*, int> kSuffixes[] = {
      {"", 0},    {"b", 0}, {"k", 1},   {"kib", 1}, {"m", 2},
      {"mib", 2}, {"g", 3}, {"gib", 3}, {"t", 4},   {"tib", 4}};
  int power = -1;
  for (const auto& [name, p] : kSuffixes) {
    if (suffix == name) power = p;
  }
  const std::string number = text.substr(0, end);
  KILN_CHECK(power >= 0 && !number.empty() && std::count(number.begin(), number.end(), '.') <= 1 &&
                 number != ".",
             bad);
  const long double value = std::strtold(number.c_str(), nullptr) * std::pow(1024.0L, power);
  KILN_CHECK(value < 18446744073709551615.0L, "--max-size '", text, "' is too large");
  return static_cast<uint64_t>(std::llroundl(value));
}

nlohmann::ordered_json EntryJson(const CacheEntry& e) {
  return {{"key", e.key},
          {"path", e.path},
          {"bytes", e.bytes},
          {"last_used", e.last_used},
          {"source_path", e.source_path},
          {"dtype", e.dtype},
          {"target", e.target},
          {"created", e.created},
          {"error",
           e.error.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(e.error)}};
}

void PrintTable(const std::vector<std::vector<std::string>>& rows) {
  std::vector<size_t> width(rows[0].size(), 0);
  for (const auto& row : rows) {
    for (size_t i = 0; i < row.size(); ++i) width[i] = std::max(width[i], row[i].size());
  }
  for (const auto& row : rows) {
    std::string line;
    for (size_t i = 0; i < row.size(); ++i) {
      line += row[i];
      if (i + 1 < row.size()) line += std::string(width[i] - row[i].size() + 2, ' ');
    }
    std::printf("%s\n", line.c_str());
  }
}

void RunList(const CacheFlags& f) {
  const ModelCache cache(f.dir);
  const std::vector<CacheEntry> entries = cache.List();
  if (f.json) {
    nlohmann::ordered_json out = nlohmann::ordered_json::array();
    for (const CacheEntry& e : entries) out.push_back(EntryJson(e));
    std::printf("%s\n", out.dump(2).c_str());
    return;
  }
  if (entries.empty()) {
    std::printf("the model cache is empty (%s)\n", cache.root().c_str());
    return;
  }
  std::vector<std::vector<std::string>> rows = {
      {"KEY", "SIZE", "LAST USED", "TARGET", "DTYPE", "SOURCE"}};
  uint64_t total = 0;
  const int64_t now = Now();
  for (const CacheEntry& e : entries) {
    total += e.bytes;
    const bool ok = e.error.empty();
    rows.push_back({e.key, HumanBytes(e.bytes), LastUsed(e.last_used, now), ok ? e.target : "-",
                    ok ? e.dtype : "-", ok ? e.source_path : "damaged: " + e.error});
  }
  PrintTable(rows);
  std::printf("%zu %s, %s in %s\n", entries.size(), entries.size() == 1 ? "entry" : "entries",
              HumanBytes(total).c_str(), cache.root().c_str());
}

void RunVerify(const CacheFlags& f) {
  const ModelCache cache(f.dir);
  const std::vector<CacheEntry> entries = cache.Verify(f.remove_damaged);
  size_t damaged = 0, removed = 0;
  for (const CacheEntry& e : entries) {
    if (e.error.empty()) {
      std::printf("ok %s\n", e.key.c_str());
      continue;
    }
    ++damaged;
    std::error_code ec;
    const bool gone = f.remove_damaged && !std::filesystem::exists(e.path, ec);
    removed += gone ? 1 : 0;
    std::printf("damaged %s: %s%s\n", e.key.c_str(), e.error.c_str(), gone ? " (removed)" : "");
  }
  std::printf("%zu %s in %s: %zu ok, %zu damaged", entries.size(),
              entries.size() == 1 ? "entry" : "entries", cache.root().c_str(),
              entries.size() - damaged, damaged);
  if (f.remove_damaged) std::printf(", %zu removed", removed);
  std::printf("\n");
  std::fflush(stdout);
  if (damaged > 0) {
    throw ArtifactError(f.remove_damaged
                            ? StrCat(damaged, " of ", entries.size(), " model cache entries in ",
                                     cache.root(), " were damaged (", removed, " removed)")
                            : StrCat(damaged, " of ", entries.size(), " model cache entries in ",
                                     cache.root(),
                                     " are damaged (kiln cache verify --delete removes them)"));
  }
}

void RunPrune(const CacheFlags& f) {
  const uint64_t max_bytes = ParseSize(f.max_size);
  const ModelCache cache(f.dir);
  const int64_t now = Now();
  uint64_t freed = 0;
  for (const CacheEntry& e : cache.Prune(max_bytes)) {
    freed += e.bytes;
    const bool temporary = e.key.find(".tmp-") != std::string::npos;
    const std::string what = temporary ? e.error
                                       : (e.error.empty() ? "" : "damaged, ") +
                                             std::string("last used ") + LastUsed(e.last_used, now);
    std::printf("removed %s (%s, %s)\n", e.key.c_str(), HumanBytes(e.bytes).c_str(), what.c_str());
  }
  uint64_t kept = 0;
  const std::vector<CacheEntry> left = cache.List();
  for (const CacheEntry& e : left) kept += e.bytes;
  std::printf("freed %s; %zu %s, %s left in %s\n", HumanBytes(freed).c_str(), left.size(),
              left.size() == 1 ? "entry" : "entries", HumanBytes(kept).c_str(),
              cache.root().c_str());
}

CLI::App* AddCacheSubcommand(CLI::App* parent, const char* name, const std::string& help,
                             const std::shared_ptr<CacheFlags>& f) {
  CLI::App* cmd = parent->add_subcommand(name, help);
  cmd->add_option("--cache-dir", f->dir,
                  "The cache's folder (default: $KILN_CACHE, else $XDG_CACHE_HOME/kiln, else "
                  "~/.cache/kiln)")
      ->type_name("DIR")
      ->capture_default_str();
  return cmd;
}

}  // namespace

void AddCacheCommand(CLI::App& app) {
  auto f = std::make_shared<CacheFlags>();
  f->dir = ModelCache::DefaultRoot(hub::ProcessEnv());
  CLI::App* cache = app.add_subcommand(
      "cache",
      "The compiled-model cache: kiln serve --model-id SOURCE exports SOURCE (a GGUF file, a "
      "Hugging Face folder or Hub id) into it on first use and maps the artifact afterwards. "
      "An entry is keyed by the source files (path, size, mtime), --dtype, --target, the shape "
      "envelope and the artifact format, so a changed model is exported again; replicas "
      "starting at once export it once. Folder: $KILN_CACHE, else $XDG_CACHE_HOME/kiln, else "
      "~/.cache/kiln");
  cache->require_subcommand(1);

  CLI::App* list = AddCacheSubcommand(
      cache, "list",
      "List the cache's entries, most recently used first: key, size, last use, target, dtype "
      "and source (damaged entries say why)",
      f);
  list->add_flag("--json", f->json,
                 "Print a JSON array of {key, path, bytes, last_used (unix seconds), "
                 "source_path, dtype, target, created, error} instead of a table");
  list->callback([f] { RunList(*f); });

  CLI::App* verify = AddCacheSubcommand(
      cache, "verify",
      "Read every entry and check its structure and the checksum of every tensor and blob; "
      "prints 'ok KEY' or 'damaged KEY: why' for each and exits with code 3 if any is "
      "damaged (kiln serve rebuilds an entry that fails to load by itself)",
      f);
  verify->add_flag("--delete", f->remove_damaged,
                   "Remove the damaged entries (not ones another kiln is exporting or loading)");
  verify->callback([f] { RunVerify(*f); });

  CLI::App* prune = AddCacheSubcommand(
      cache, "prune",
      "Remove least recently used entries until the cache holds at most --max-size, and "
      "temporary files of interrupted exports. Entries being exported or loaded are kept; a "
      "running kiln serve keeps serving a removed entry (it stays mapped) and exports it "
      "again on its next start",
      f);
  prune
      ->add_option("--max-size", f->max_size,
                   "Most bytes to keep: a number of bytes or one with a K, M, G or T suffix "
                   "(powers of 1024; KiB, MiB, GiB, TiB too, any case), e.g. 20G; 0 removes "
                   "every entry")
      ->type_name("SIZE")
      ->capture_default_str();
  prune->callback([f] { RunPrune(*f); });
}

}  // namespace kiln
