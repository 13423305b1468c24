#include "export/model_cache.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <optional>
#include <thread>
#include <utility>

#include "formats/kiln_artifact.h"
#include "kernels/target.h"
#include "util/error.h"
#include "util/log.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;

constexpr const char* kTmpInfix = ".kiln.tmp-";  // ExportModel's "{out}.tmp-{pid}"
constexpr int64_t kStaleTmpSeconds = 3600;

fs::path ArtifactsDir(const std::string& root) { return fs::path(root) / "artifacts"; }
fs::path LocksDir(const std::string& root) { return fs::path(root) / "locks"; }
fs::path EntryPath(const std::string& root, const std::string& key) {
  return ArtifactsDir(root) / (key + kArtifactExtension);
}
fs::path LockPath(const std::string& root, const std::string& key) {
  return LocksDir(root) / (key + ".lock");
}

// An exclusive flock(2) on a key's lock file, released when destroyed.
class KeyLock {
 public:
  explicit KeyLock(fs::path path) : path_(std::move(path)) {}
  ~KeyLock() { Unlock(); }
  KeyLock(const KeyLock&) = delete;
  KeyLock& operator=(const KeyLock&) = delete;

  void Lock() { Acquire(true); }
  bool TryLock() { return Acquire(false); }  // false: another process holds it
  void Unlock() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }
  // Removes the lock file (while holding the lock: a waiter then finds it gone and reopens).
  void RemoveFile() {
    std::error_code ec;
    fs::remove(path_, ec);
  }

 private:
  bool Acquire(bool wait);

  fs::path path_;
  int fd_ = -1;
};

bool KeyLock::Acquire(bool wait) {
  for (;;) {
    const int fd = ::open(path_.c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0644);
    KILN_CHECK(fd >= 0, path_.string(), ": cannot open the lock file: ", std::strerror(errno));
    int rc = 0;
    do {
      rc = ::flock(fd, wait ? LOCK_EX : LOCK_EX | LOCK_NB);
    } while (rc != 0 && errno == EINTR);
    if (rc != 0) {
      const int err = errno;
      ::close(fd);
      KILN_CHECK(err == EWOULDBLOCK, path_.string(), ": cannot lock: ", std::strerror(err));
      return false;
    }
    // Prune removes a free lock file: the lock is only good while the path names its inode.
    struct stat held {
    }, now{};
    if (::fstat(fd, &held) == 0 && ::stat(path_.c_str(), &now) == 0 && held.st_ino == now.st_ino &&
        held.st_dev == now.st_dev) {
      fd_ = fd;
      return true;
    }
    ::close(fd);
  }
}

// mkdir -p with mode 0755 for the folders it creates.
void MakeDirs(const fs::path& dir) {
  fs::path prefix;
  std::error_code ec;
  for (const fs::path& part : dir) {
    prefix /= part;
    if (::mkdir(prefix.c_str(), 0755) != 0 && errno != EEXIST && !fs::is_directory(prefix, ec)) {
      throw Error(StrCat(prefix.string(), ": cannot create the folder: ", std::strerror(errno)));
    }
  }
  KILN_CHECK(fs::is_directory(dir, ec), dir.string(), ": not a folder");
}

std::optional<struct stat> Stat(const fs::path& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return std::nullopt;
  return st;
}

// The mtime is the entry's last use.
void Touch(const fs::path& path) {
  const timespec times[2] = {{0, UTIME_OMIT}, {0, UTIME_NOW}};
  if (::utimensat(AT_FDCWD, path.c_str(), times, 0) != 0) {
    log::Debug(StrCat(path.string(), ": cannot set the last-use time: ", std::strerror(errno)));
  }
}

std::string Mib(uint64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1f MiB", static_cast<double>(bytes) / (1 << 20));
  return buf;
}

// The entry at `file` (nullopt when it vanished meanwhile), its manifest's fields when it parses.
std::optional<CacheEntry> ReadEntry(const fs::path& file) {
  const std::optional<struct stat> st = Stat(file);
  if (!st) return std::nullopt;
  CacheEntry e;
  e.key = file.stem().string();
  e.path = file.string();
  e.bytes = static_cast<uint64_t>(st->st_size);
  e.last_used = static_cast<int64_t>(st->st_mtim.tv_sec);
  try {
    const ArtifactFile artifact(e.path);
    const ArtifactManifest& m = artifact.manifest();
    e.source_path = m.source_path;
    e.dtype = m.dtype;
    e.target = m.target;
    e.created = m.created;
  } catch (const Error& err) {
    e.error = err.what();
  }
  return e;
}

// {root}/artifacts/*.kiln (temporary files of exports in progress end in .tmp-PID instead).
std::vector<fs::path> EntryFiles(const std::string& root) {
  std::vector<fs::path> files;
  std::error_code ec;
  for (fs::directory_iterator it(ArtifactsDir(root), ec), end; !ec && it != end; it.increment(ec)) {
    if (it->path().extension() == kArtifactExtension && it->is_regular_file(ec)) {
      files.push_back(it->path());
    }
  }
  return files;
}

bool PidGone(const std::string& digits) {
  if (digits.empty() || digits.size() > 9 ||
      !std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return false;
  }
  return ::kill(static_cast<pid_t>(std::stol(digits)), 0) != 0 && errno == ESRCH;
}

// Removes "{key}.kiln.tmp-{pid}" files left by exports that died: older than an hour or of a
// process that is gone, and never while the key's lock is held (an export in progress, maybe
// of another PID namespace sharing the folder).
std::vector<CacheEntry> RemoveStaleTemporaries(const std::string& root) {
  std::vector<CacheEntry> removed;
  std::error_code ec;
  const int64_t now = static_cast<int64_t>(std::time(nullptr));
  for (fs::directory_iterator it(ArtifactsDir(root), ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    const size_t at = name.rfind(kTmpInfix);
    const std::optional<struct stat> st = Stat(it->path());
    if (at == std::string::npos || at == 0 || !st) continue;
    const bool old = now - static_cast<int64_t>(st->st_mtim.tv_sec) > kStaleTmpSeconds;
    if (!old && !PidGone(name.substr(at + std::strlen(kTmpInfix)))) continue;
    KeyLock lock(LockPath(root, name.substr(0, at)));
    std::error_code rm;
    if (!lock.TryLock() || !fs::remove(it->path(), rm)) continue;
    CacheEntry e;
    e.key = name;
    e.path = it->path().string();
    e.bytes = static_cast<uint64_t>(st->st_size);
    e.last_used = static_cast<int64_t>(st->st_mtim.tv_sec);
    e.error = "temporary file of an interrupted export";
    removed.push_back(std::move(e));
  }
  return removed;
}

// Lock files whose entry is gone (a failed export, a removed entry), unless held.
void RemoveOrphanLocks(const std::string& root) {
  std::error_code ec;
  for (fs::directory_iterator it(LocksDir(root), ec), end; !ec && it != end; it.increment(ec)) {
    if (it->path().extension() != ".lock") continue;
    const std::string key = it->path().stem().string();
    std::error_code exists_ec;
    if (fs::exists(EntryPath(root, key), exists_ec)) continue;
    KeyLock lock(it->path());
    if (lock.TryLock() && !fs::exists(EntryPath(root, key), exists_ec)) lock.RemoveFile();
  }
}

int VerifyThreads() {
  return static_cast<int>(std::clamp(std::thread::hardware_concurrency(), 1u, 8u));
}

// Removes the damaged entry `e` under its lock, unless in use or replaced since it was checked
// (`inode`); says so in e.error when it stays.
void RemoveDamaged(const std::string& root, CacheEntry& e, ino_t inode) {
  KeyLock lock(LockPath(root, e.key));
  if (!lock.TryLock()) {
    e.error += " (in use by another kiln: not removed)";
    return;
  }
  const std::optional<struct stat> st = Stat(e.path);
  std::error_code ec;
  if (st && st->st_ino == inode && fs::remove(e.path, ec)) {
    lock.RemoveFile();
  } else if (st) {
    e.error += " (replaced meanwhile: not removed)";
  }
}

void Export(const std::string& source, const ExportOptions& options, const std::string& key,
            const std::string& path, CacheLookup& r) {
  log::Info(StrCat("exporting ", source, " into the model cache as ", key));
  const ExportResult e = ExportModel(source, path, options);
  r.exported = true;
  r.export_seconds = e.seconds;
  char seconds[32];
  std::snprintf(seconds, sizeof(seconds), "%.1f", e.seconds);
  log::Info(StrCat("exported ", key, " in ", seconds, " s: ", Mib(e.bytes), ", ", e.tensors,
                   " tensors (", e.packed_tensors, " packed for ", e.target, ")"));
}

}  // namespace

ModelCache::ModelCache(std::string root) : root_(std::move(root)) {
  KILN_CHECK(!root_.empty(), "the model cache folder must not be empty");
}

CacheLookup ModelCache::GetOrExport(const std::string& source, const ExportOptions& options,
                                    const std::function<void(const std::string& path)>& load) {
  const std::string key = KeyFor(source, options);
  MakeDirs(ArtifactsDir(root_));
  MakeDirs(LocksDir(root_));
  CacheLookup r;
  r.path = EntryPath(root_, key).string();
  KeyLock lock(LockPath(root_, key));
  if (!lock.TryLock()) {
    log::Info(StrCat("waiting for another kiln to finish with model cache entry ", key));
    lock.Lock();
  }
  std::error_code ec;
  if (!fs::exists(r.path, ec)) {
    Export(source, options, key, r.path, r);
    load(r.path);
  } else {
    try {
      load(r.path);
    } catch (const ArtifactError& e) {
      log::Warn(StrCat("model cache entry ", r.path, " is damaged (", e.what(),
                       "): removing it and exporting ", source, " again"));
      r.rebuilt_reason = e.what();
      fs::remove(r.path, ec);
      Export(source, options, key, r.path, r);
      load(r.path);
    }
  }
  Touch(r.path);
  return r;
}

std::vector<CacheEntry> ModelCache::List() const {
  std::vector<CacheEntry> entries;
  for (const fs::path& file : EntryFiles(root_)) {
    if (std::optional<CacheEntry> e = ReadEntry(file)) entries.push_back(std::move(*e));
  }
  std::sort(entries.begin(), entries.end(), [](const CacheEntry& a, const CacheEntry& b) {
    return a.last_used != b.last_used ? a.last_used > b.last_used : a.key < b.key;
  });
  return entries;
}

std::vector<CacheEntry> ModelCache::Verify(bool remove_damaged) const {
  std::vector<CacheEntry> entries = List();
  if (remove_damaged && !entries.empty()) MakeDirs(LocksDir(root_));
  for (CacheEntry& e : entries) {
    const std::optional<struct stat> st = Stat(e.path);
    if (!st) continue;  // removed meanwhile
    bool damaged = false;
    try {
      ArtifactFile(e.path).VerifyChecksums(VerifyThreads());
      e.error.clear();
    } catch (const ArtifactError& err) {
      e.error = err.what();
      damaged = true;
    } catch (const Error& err) {
      e.error = err.what();  // unreadable (permissions, I/O): reported, never removed
    }
    if (damaged && remove_damaged) RemoveDamaged(root_, e, st->st_ino);
  }
  return entries;
}

std::vector<CacheEntry> ModelCache::Prune(uint64_t max_bytes) const {
  std::error_code ec;
  if (fs::is_directory(ArtifactsDir(root_), ec)) MakeDirs(LocksDir(root_));
  std::vector<CacheEntry> removed = RemoveStaleTemporaries(root_);
  const std::vector<CacheEntry> entries = List();
  uint64_t total = 0;
  for (const CacheEntry& e : entries) total += e.bytes;
  for (auto it = entries.rbegin(); it != entries.rend(); ++it) {
    if (max_bytes != 0 && total <= max_bytes) break;
    KeyLock lock(LockPath(root_, it->key));
    if (!lock.TryLock()) {
      log::Info(StrCat("model cache entry ", it->key, " is being exported or loaded: kept"));
      continue;
    }
    if (!fs::remove(it->path, ec)) continue;  // removed meanwhile
    lock.RemoveFile();
    total -= it->bytes;
    removed.push_back(*it);
  }
  RemoveOrphanLocks(root_);
  return removed;
}

}  // namespace kiln
