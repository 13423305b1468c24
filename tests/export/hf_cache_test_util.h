// A Hugging Face cache tree built in a temp dir the way huggingface_hub lays it out: blobs/,
// snapshots/{commit}/ of relative symlinks into blobs/, refs/{revision} holding a commit.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "export/hf_cache_env.h"
#include "export/hub_id.h"

namespace kiln::hub::testing_util {

namespace fs = std::filesystem;

inline void WriteText(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
}

// 40 hex digits from a small number, so tests can name commits.
inline std::string Commit(int n) {
  std::string hex = std::to_string(n);
  return std::string(40 - hex.size(), 'a') + hex;
}

// Runs in `dir` while alive, so relative ids meet the paths a test made (or none).
class ScopedCwd {
 public:
  explicit ScopedCwd(const fs::path& dir) : saved_(fs::current_path()) {
    fs::create_directories(dir);
    fs::current_path(dir);
  }
  ~ScopedCwd() { fs::current_path(saved_); }
  ScopedCwd(const ScopedCwd&) = delete;
  ScopedCwd& operator=(const ScopedCwd&) = delete;

 private:
  fs::path saved_;
};

class HubCacheTest : public ::testing::Test {
 protected:
  HubCacheTest() {
    static std::atomic<int> counter{0};
    base_ = fs::temp_directory_path() /
            ("kiln_export_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
    fs::remove_all(base_);
    root_ = base_ / "hub";
    fs::create_directories(root_);
    vars_["HF_HUB_CACHE"] = root_.string();
  }
  ~HubCacheTest() override {
    std::error_code ec;
    fs::remove_all(base_, ec);
  }

  GetEnv Env() const {
    return [vars = vars_](const std::string& name) -> std::optional<std::string> {
      auto it = vars.find(name);
      if (it == vars.end()) return std::nullopt;
      return it->second;
    };
  }

  fs::path Repo(const std::string& repo_id) const { return root_ / RepoFolderName(repo_id); }

  // snapshots/{commit}/{file} -> ../../blobs/{blob} for each file (deeper for subfolders), the
  // blob holding the file's name.
  fs::path AddSnapshot(const std::string& repo_id, const std::string& commit,
                       const std::vector<std::string>& files) {
    const fs::path snapshot = Repo(repo_id) / "snapshots" / commit;
    fs::create_directories(snapshot);
    for (const std::string& file : files) {
      const std::string blob = "blob-" + std::to_string(blob_counter_++);
      WriteText(Repo(repo_id) / "blobs" / blob, file);
      const fs::path link = snapshot / file;
      fs::create_directories(link.parent_path());
      fs::create_symlink(fs::relative(Repo(repo_id) / "blobs" / blob, link.parent_path()), link);
    }
    return snapshot;
  }

  void AddRef(const std::string& repo_id, const std::string& ref, const std::string& commit) {
    WriteText(Repo(repo_id) / "refs" / ref, commit);  // no newline, as huggingface_hub writes
  }

  fs::path base_;
  fs::path root_;
  std::map<std::string, std::string> vars_;
  int blob_counter_ = 0;
};

}  // namespace kiln::hub::testing_util
