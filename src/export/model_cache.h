// The compiled-model cache: Kiln artifacts keyed by what they were made from and how, so that a
// model is exported once per machine and every later `kiln serve --model-id SOURCE` (three
// replicas starting at once included) maps the result.
//
//   {root}/artifacts/{key}.kiln   one artifact per (source identity, export options, target,
//                                 artifact format version); its mtime is its last use (LRU)
//   {root}/locks/{key}.lock       flock(2) held while the entry is checked or exported
//
// {root}: $KILN_CACHE, else $XDG_CACHE_HOME/kiln, else $HOME/.cache/kiln.
// {key}: "{source stem}-{dtype}-{target}-{16 hex digits}", the digits an XXH3-64 of the source's
// identity (each weight, config and tokenizer file's canonical path, size and mtime, so that a
// changed file is a new entry without reading gigabytes to find out) and the options. The stem
// is the GGUF file's stem or the folder's name (a Hugging Face snapshot's model name, not its
// commit), reduced to [A-Za-z0-9._-] and 48 characters.
//
// Entries are never modified in place: an export writes "{key}.kiln.tmp-{pid}" and renames it,
// and removal unlinks, so a server that has an entry mapped keeps running when it is pruned or
// rebuilt (Linux keeps the unlinked file until it is unmapped).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "export/exporter.h"
#include "export/hf_cache_env.h"

namespace kiln {

struct CacheEntry {
  std::string key;
  std::string path;  // {root}/artifacts/{key}.kiln
  uint64_t bytes = 0;
  int64_t last_used = 0;  // unix seconds (the file's mtime)
  // From the manifest; empty when the entry does not parse (then `error` says why).
  std::string source_path, dtype, target, created;
  std::string error;
};

struct CacheLookup {
  std::string path;       // the artifact to load
  bool exported = false;  // this call exported it (a miss, or a damaged entry rebuilt)
  double export_seconds = 0;
  std::string rebuilt_reason;  // why a damaged entry was rebuilt, else empty
};

class ModelCache {
 public:
  // $KILN_CACHE, $XDG_CACHE_HOME/kiln or $HOME/.cache/kiln as `env` gives them.
  static std::string DefaultRoot(const hub::GetEnv& env);

  explicit ModelCache(std::string root);
  const std::string& root() const { return root_; }

  // The key of (source, options); options.target "native" is resolved to this CPU's target.
  std::string KeyFor(const std::string& source, const ExportOptions& options) const;

  // Calls load(path) on the entry for (source, options), exporting it first under the key's
  // lock when absent (another process exporting the same key is waited for, and its result
  // used). When the entry is damaged (load throws ArtifactError: truncated, wrong magic,
  // checksum mismatch, ...) the error is logged, the entry removed, exported again and loaded
  // once more. Other exceptions from load or export propagate. The entry's mtime is set to now.
  CacheLookup GetOrExport(const std::string& source, const ExportOptions& options,
                          const std::function<void(const std::string& path)>& load);

  // Every entry, most recently used first (damaged ones too, with `error` set).
  std::vector<CacheEntry> List() const;
  // Opens every entry and verifies its checksums; returns every entry, `error` set for those
  // that fail. `remove_damaged`: delete the damaged ones (ArtifactError: malformed, truncated,
  // checksum mismatch), unless in use (then `error` says so); unreadable ones (I/O,
  // permissions) are only reported.
  std::vector<CacheEntry> Verify(bool remove_damaged) const;
  // Removes least recently used entries until the total is at most max_bytes (0: all), and
  // leftover temporary files of interrupted exports; returns the removed entries (temporary
  // files with key = their file name and `error` saying what they were). An entry whose lock
  // is held (being exported or loaded) is kept.
  std::vector<CacheEntry> Prune(uint64_t max_bytes) const;

 private:
  std::string root_;
};

}  // namespace kiln
