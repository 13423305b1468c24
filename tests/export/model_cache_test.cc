// The compiled-model cache: keys, miss/hit, damaged entries rebuilt, verify, prune, and three
// processes starting on an empty cache at once.
#include "export/model_cache.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "formats/formats_test_util.h"
#include "formats/gguf_writer.h"
#include "formats/kiln_artifact.h"
#include "kernels/target.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;
using testing_util::TempDir;

// A one-layer Llama small enough to export in milliseconds; `extra` metadata changes the size.
void WriteTinyLlama(const std::string& path, uint32_t seed, bool extra = false) {
  constexpr int64_t kVocab = 32, kHidden = 64, kKvDim = 32, kFfn = 128;
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-0.1f, 0.1f);
  auto random = [&](std::vector<int64_t> shape) {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    std::vector<float> v(static_cast<size_t>(n));
    for (float& x : v) x = dist(rng);
    return v;
  };
  GgufWriter w;
  w.SetString("general.architecture", "llama");
  w.SetUint32("llama.embedding_length", kHidden);
  w.SetUint32("llama.feed_forward_length", kFfn);
  w.SetUint32("llama.block_count", 1);
  w.SetUint32("llama.attention.head_count", 4);
  w.SetUint32("llama.attention.head_count_kv", 2);
  w.SetUint32("llama.context_length", 128);
  if (extra) w.SetString("general.name", "rewritten");
  auto add = [&](const std::string& name, std::vector<int64_t> shape) {
    w.AddTensorF32(name, shape, random(shape));
  };
  add("token_embd.weight", {kVocab, kHidden});
  add("blk.0.attn_norm.weight", {kHidden});
  add("blk.0.attn_q.weight", {kHidden, kHidden});
  add("blk.0.attn_k.weight", {kKvDim, kHidden});
  add("blk.0.attn_v.weight", {kKvDim, kHidden});
  add("blk.0.attn_output.weight", {kHidden, kHidden});
  add("blk.0.ffn_norm.weight", {kHidden});
  add("blk.0.ffn_gate.weight", {kFfn, kHidden});
  add("blk.0.ffn_up.weight", {kFfn, kHidden});
  add("blk.0.ffn_down.weight", {kHidden, kFfn});
  add("output_norm.weight", {kHidden});
  add("output.weight", {kVocab, kHidden});
  w.Write(path);
}

void SetMtime(const std::string& path, int64_t unix_seconds) {
  const timespec times[2] = {{unix_seconds, 0}, {unix_seconds, 0}};
  ASSERT_EQ(::utimensat(AT_FDCWD, path.c_str(), times, 0), 0) << path;
}

int64_t Mtime(const std::string& path) {
  struct stat st {};
  EXPECT_EQ(::stat(path.c_str(), &st), 0) << path;
  return st.st_mtim.tv_sec;
}

void WriteFile(const std::string& path, size_t bytes) {
  std::ofstream(path, std::ios::binary) << std::string(bytes, 'x');
}

// What serve's loader does first: map and validate, then (here) check every checksum.
void LoadAndVerify(const std::string& path) { ArtifactFile(path).VerifyChecksums(1); }

class ModelCacheTest : public ::testing::Test {
 protected:
  ModelCacheTest() : root_(dir_.File("cache")), cache_(root_), source_(dir_.File("tiny.gguf")) {
    WriteTinyLlama(source_, 1);
  }

  CacheLookup Get(const ExportOptions& options = {}) {
    return cache_.GetOrExport(source_, options, [this](const std::string& path) {
      loads_.push_back(path);
      LoadAndVerify(path);
    });
  }
  std::string Artifacts() const { return root_ + "/artifacts"; }

  TempDir dir_;
  std::string root_;
  ModelCache cache_;
  std::string source_;
  std::vector<std::string> loads_;
};

TEST(ModelCacheRoot, FromEnvironment) {
  std::map<std::string, std::string> vars;
  const hub::GetEnv env = [&vars](const std::string& name) -> std::optional<std::string> {
    auto it = vars.find(name);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
  vars["HOME"] = "/home/u";
  EXPECT_EQ(ModelCache::DefaultRoot(env), "/home/u/.cache/kiln");
  vars["XDG_CACHE_HOME"] = "";
  EXPECT_EQ(ModelCache::DefaultRoot(env), "/home/u/.cache/kiln");
  vars["XDG_CACHE_HOME"] = "~/xdg";
  EXPECT_EQ(ModelCache::DefaultRoot(env), "/home/u/xdg/kiln");
  vars["KILN_CACHE"] = "";
  EXPECT_EQ(ModelCache::DefaultRoot(env), "/home/u/xdg/kiln");
  vars["KILN_CACHE"] = "~/kc";
  EXPECT_EQ(ModelCache::DefaultRoot(env), "/home/u/kc");
}

TEST_F(ModelCacheTest, KeyIsStableAndNamesWhatChanged) {
  const std::string key = cache_.KeyFor(source_, {});
  const std::string prefix = "tiny-source-" + kernels::NativeTarget() + "-";
  ASSERT_EQ(key.rfind(prefix, 0), 0u) << key;
  EXPECT_EQ(key.size(), prefix.size() + 16);
  EXPECT_EQ(cache_.KeyFor(source_, {}), key);
  ExportOptions explicit_target;
  explicit_target.target = kernels::NativeTarget();
  EXPECT_EQ(cache_.KeyFor(source_, explicit_target), key);

  ExportOptions f16;
  f16.dtype = "f16";
  const std::string f16_key = cache_.KeyFor(source_, f16);
  EXPECT_NE(f16_key, key);
  EXPECT_EQ(f16_key.rfind("tiny-f16-", 0), 0u) << f16_key;
  ExportOptions batch;
  batch.batch_size = 4;
  EXPECT_NE(cache_.KeyFor(source_, batch), key);
  ExportOptions scalar;
  scalar.target = "scalar";
  EXPECT_NE(cache_.KeyFor(source_, scalar), key);

  SetMtime(source_, 1'000'000'000);
  const std::string touched = cache_.KeyFor(source_, {});
  EXPECT_NE(touched, key);
  WriteTinyLlama(source_, 1, /*extra=*/true);  // other size
  SetMtime(source_, 1'000'000'000);
  EXPECT_NE(cache_.KeyFor(source_, {}), touched);

  EXPECT_THROW(cache_.KeyFor(dir_.File("missing.gguf"), {}), Error);
}

TEST_F(ModelCacheTest, FolderKeyCoversWeightsAndJsonOnly) {
  const fs::path model = fs::path(dir_.path()) / "models--org--My Model" / "snapshots" / "abc123";
  fs::create_directories(model);
  WriteFile((model / "config.json").string(), 10);
  WriteFile((model / "model.safetensors").string(), 100);
  WriteFile((model / "README.md").string(), 5);
  const std::string key = cache_.KeyFor(model.string(), {});
  EXPECT_EQ(key.rfind("My_Model-source-", 0), 0u) << key;
  EXPECT_EQ(cache_.KeyFor(model.string() + "/", {}), key);

  SetMtime((model / "README.md").string(), 1'000'000'000);
  EXPECT_EQ(cache_.KeyFor(model.string(), {}), key);
  SetMtime((model / "config.json").string(), 1'000'000'000);
  const std::string changed = cache_.KeyFor(model.string(), {});
  EXPECT_NE(changed, key);
  WriteFile((model / "model.safetensors").string(), 101);
  EXPECT_NE(cache_.KeyFor(model.string(), {}), changed);

  const fs::path plain = fs::path(dir_.path()) / "plain-folder";
  fs::create_directories(plain);
  WriteFile((plain / "config.json").string(), 10);
  EXPECT_EQ(cache_.KeyFor(plain.string(), {}).rfind("plain-folder-source-", 0), 0u);
}

TEST_F(ModelCacheTest, MissExportsOnceThenHits) {
  const CacheLookup first = Get();
  EXPECT_TRUE(first.exported);
  EXPECT_TRUE(first.rebuilt_reason.empty());
  EXPECT_EQ(first.path, Artifacts() + "/" + cache_.KeyFor(source_, {}) + ".kiln");
  EXPECT_EQ(loads_, std::vector<std::string>{first.path});
  EXPECT_TRUE(fs::exists(root_ + "/locks/" + cache_.KeyFor(source_, {}) + ".lock"));

  SetMtime(first.path, 1000);
  const CacheLookup second = Get();
  EXPECT_FALSE(second.exported);
  EXPECT_EQ(second.path, first.path);
  EXPECT_EQ(loads_.size(), 2u);
  EXPECT_GT(Mtime(first.path), 1000);  // touched: last use

  ExportOptions f16;
  f16.dtype = "f16";
  const CacheLookup other = Get(f16);
  EXPECT_TRUE(other.exported);
  EXPECT_NE(other.path, first.path);
  EXPECT_EQ(cache_.List().size(), 2u);
}

TEST_F(ModelCacheTest, TruncatedEntryIsRebuilt) {
  const CacheLookup first = Get();
  ASSERT_EQ(::truncate(first.path.c_str(), static_cast<off_t>(fs::file_size(first.path) / 2)), 0);
  const CacheLookup again = Get();
  EXPECT_TRUE(again.exported);
  EXPECT_NE(again.rebuilt_reason.find("truncated"), std::string::npos) << again.rebuilt_reason;
  EXPECT_EQ(loads_.size(), 3u);  // first, the damaged one, the rebuilt one
  EXPECT_NO_THROW(LoadAndVerify(again.path));
  EXPECT_FALSE(Get().exported);
}

TEST_F(ModelCacheTest, FlippedTensorByteIsRebuilt) {
  const CacheLookup first = Get();
  uint64_t at = 0;
  {
    const ArtifactFile artifact(first.path);
    const ArtifactTensor& t = artifact.manifest().tensors.at(2);
    at = t.offset + t.bytes / 2;
  }
  const int fd = ::open(first.path.c_str(), O_RDWR | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  char byte = 0;
  ASSERT_EQ(::pread(fd, &byte, 1, static_cast<off_t>(at)), 1);
  byte = static_cast<char>(byte ^ 0x40);
  ASSERT_EQ(::pwrite(fd, &byte, 1, static_cast<off_t>(at)), 1);
  ::close(fd);
  EXPECT_THROW(LoadAndVerify(first.path), ArtifactError);

  const CacheLookup again = Get();
  EXPECT_TRUE(again.exported);
  EXPECT_FALSE(again.rebuilt_reason.empty());
  EXPECT_NO_THROW(LoadAndVerify(again.path));
}

TEST_F(ModelCacheTest, OtherLoadErrorsPropagate) {
  Get();
  EXPECT_THROW(cache_.GetOrExport(source_, {}, [](const std::string&) { throw Error("boom"); }),
               Error);
  EXPECT_EQ(cache_.List().size(), 1u);  // not treated as damage
}

TEST_F(ModelCacheTest, FailedExportLeavesNothing) {
  const std::string bad = dir_.File("bad.gguf");
  WriteFile(bad, 100);
  EXPECT_THROW(cache_.GetOrExport(bad, {}, LoadAndVerify), Error);
  EXPECT_TRUE(cache_.List().empty());
  EXPECT_TRUE(fs::is_empty(Artifacts()));
}

TEST_F(ModelCacheTest, ListReadsManifests) {
  const CacheLookup a = Get();
  ExportOptions f16;
  f16.dtype = "f16";
  const CacheLookup b = Get(f16);
  SetMtime(a.path, 2000);
  SetMtime(b.path, 1000);
  WriteFile(Artifacts() + "/junk.kiln", 10);
  SetMtime(Artifacts() + "/junk.kiln", 500);
  WriteFile(Artifacts() + "/" + cache_.KeyFor(source_, {}) + ".kiln.tmp-1", 10);

  const std::vector<CacheEntry> entries = cache_.List();
  ASSERT_EQ(entries.size(), 3u);
  EXPECT_EQ(entries[0].path, a.path);
  EXPECT_EQ(entries[0].key, cache_.KeyFor(source_, {}));
  EXPECT_EQ(entries[0].last_used, 2000);
  EXPECT_EQ(entries[0].bytes, fs::file_size(a.path));
  EXPECT_EQ(entries[0].dtype, "source");
  EXPECT_EQ(entries[0].target, kernels::NativeTarget());
  EXPECT_EQ(entries[0].source_path, source_);
  EXPECT_FALSE(entries[0].created.empty());
  EXPECT_TRUE(entries[0].error.empty());
  EXPECT_EQ(entries[1].dtype, "f16");
  EXPECT_EQ(entries[2].key, "junk");
  EXPECT_FALSE(entries[2].error.empty());
  EXPECT_TRUE(entries[2].dtype.empty());
}

TEST_F(ModelCacheTest, VerifyFlagsAndRemovesDamaged) {
  const CacheLookup good = Get();
  const std::string junk = Artifacts() + "/junk.kiln";
  WriteFile(junk, 5000);
  std::vector<CacheEntry> checked = cache_.Verify(false);
  ASSERT_EQ(checked.size(), 2u);
  for (const CacheEntry& e : checked) {
    EXPECT_EQ(e.error.empty(), e.path == good.path) << e.key << ": " << e.error;
  }
  EXPECT_TRUE(fs::exists(junk));

  checked = cache_.Verify(true);
  EXPECT_EQ(checked.size(), 2u);
  EXPECT_FALSE(fs::exists(junk));
  EXPECT_TRUE(fs::exists(good.path));
  checked = cache_.Verify(false);
  ASSERT_EQ(checked.size(), 1u);
  EXPECT_TRUE(checked[0].error.empty());
}

class ModelCachePrune : public ::testing::Test {
 protected:
  ModelCachePrune() : root_(dir_.File("cache")), cache_(root_) {
    fs::create_directories(root_ + "/artifacts");
  }
  std::string Entry(const std::string& key, size_t bytes, int64_t last_used) {
    const std::string path = root_ + "/artifacts/" + key + ".kiln";
    WriteFile(path, bytes);
    SetMtime(path, last_used);
    return path;
  }
  std::vector<std::string> Keys() const {
    std::vector<std::string> keys;
    for (const CacheEntry& e : cache_.List()) keys.push_back(e.key);
    return keys;
  }

  TempDir dir_;
  std::string root_;
  ModelCache cache_;
};

TEST_F(ModelCachePrune, RemovesLeastRecentlyUsedFirst) {
  Entry("old", 1000, 1000);
  Entry("mid", 1000, 2000);
  Entry("new", 1000, 3000);
  EXPECT_TRUE(cache_.Prune(5000).empty());
  EXPECT_EQ(Keys(), (std::vector<std::string>{"new", "mid", "old"}));

  std::vector<CacheEntry> removed = cache_.Prune(2500);
  ASSERT_EQ(removed.size(), 1u);
  EXPECT_EQ(removed[0].key, "old");
  EXPECT_EQ(removed[0].bytes, 1000u);
  EXPECT_EQ(Keys(), (std::vector<std::string>{"new", "mid"}));
  EXPECT_FALSE(fs::exists(root_ + "/locks/old.lock"));

  removed = cache_.Prune(1000);
  ASSERT_EQ(removed.size(), 1u);
  EXPECT_EQ(removed[0].key, "mid");
  removed = cache_.Prune(0);
  ASSERT_EQ(removed.size(), 1u);
  EXPECT_TRUE(Keys().empty());
  EXPECT_TRUE(fs::is_empty(root_ + "/locks"));
}

TEST_F(ModelCachePrune, KeepsLockedEntries) {
  Entry("busy", 1000, 1000);
  Entry("idle", 1000, 2000);
  fs::create_directories(root_ + "/locks");
  const std::string lock_path = root_ + "/locks/busy.lock";
  const int fd = ::open(lock_path.c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0644);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::flock(fd, LOCK_EX), 0);  // another open file description: conflicts with Prune's
  const std::vector<CacheEntry> removed = cache_.Prune(0);
  ::close(fd);
  ASSERT_EQ(removed.size(), 1u);
  EXPECT_EQ(removed[0].key, "idle");
  EXPECT_EQ(Keys(), std::vector<std::string>{"busy"});
  EXPECT_TRUE(fs::exists(lock_path));
}

TEST_F(ModelCachePrune, RemovesStaleTemporaries) {
  const pid_t child = ::fork();
  if (child == 0) ::_exit(0);
  ASSERT_GT(child, 0);
  ASSERT_EQ(::waitpid(child, nullptr, 0), child);  // now a PID that is gone
  const std::string art = root_ + "/artifacts/";
  const std::string self = std::to_string(::getpid());
  const int64_t now = static_cast<int64_t>(std::time(nullptr));
  WriteFile(art + "a.kiln.tmp-" + std::to_string(child), 10);  // dead exporter
  WriteFile(art + "b.kiln.tmp-" + self, 10);                   // live and recent
  WriteFile(art + "c.kiln.tmp-" + self, 10);                   // live but two hours old
  SetMtime(art + "c.kiln.tmp-" + self, now - 7200);
  WriteFile(art + "d.kiln.tmp-" + std::to_string(child), 10);  // dead, but its lock is held
  fs::create_directories(root_ + "/locks");
  const std::string lock_path = root_ + "/locks/d.lock";
  const int fd = ::open(lock_path.c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0644);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::flock(fd, LOCK_EX), 0);
  Entry("kept", 10, now);

  const std::vector<CacheEntry> removed = cache_.Prune(1000);
  ::close(fd);
  std::vector<std::string> names;
  for (const CacheEntry& e : removed) names.push_back(e.key);
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{"a.kiln.tmp-" + std::to_string(child),
                                             "c.kiln.tmp-" + self}));
  EXPECT_TRUE(fs::exists(art + "b.kiln.tmp-" + self));
  EXPECT_TRUE(fs::exists(art + "d.kiln.tmp-" + std::to_string(child)));
  EXPECT_EQ(Keys(), std::vector<std::string>{"kept"});
}

// Three processes (three replicas starting) on an empty cache: one exports, two wait and load.
TEST_F(ModelCacheTest, ConcurrentProcessesExportOnce) {
  int go[2];
  ASSERT_EQ(::pipe(go), 0);
  std::vector<pid_t> children;
  for (int i = 0; i < 3; ++i) {
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      ::close(go[1]);
      char c;
      while (::read(go[0], &c, 1) < 0 && errno == EINTR) {
      }
      int code = 1;
      try {
        const CacheLookup r = cache_.GetOrExport(source_, {}, [](const std::string& path) {
          LoadAndVerify(path);
          std::this_thread::sleep_for(std::chrono::milliseconds(20));  // widen the window
        });
        code = r.exported ? 10 : 11;
      } catch (...) {
        code = 2;
      }
      ::_exit(code);
    }
    children.push_back(pid);
  }
  ::close(go[0]);
  ::close(go[1]);  // every child's read returns at once
  std::map<int, int> codes;
  for (pid_t pid : children) {
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFEXITED(status));
    ++codes[WEXITSTATUS(status)];
  }
  EXPECT_EQ(codes, (std::map<int, int>{{10, 1}, {11, 2}}));
  EXPECT_EQ(cache_.Verify(false).size(), 1u);
}

}  // namespace
}  // namespace kiln
