// Hub ids resolved from a Hugging Face cache tree built in a temp dir: refs, revisions, what a
// snapshot is used as, the messages of each miss, and local paths winning over ids.
#include "export/hf_cache.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <functional>
#include <string>

#include "export/hf_cache_test_util.h"
#include "util/error.h"

namespace kiln::hub {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;
namespace fs = std::filesystem;
using testing_util::Commit;
using testing_util::HubCacheTest;
using testing_util::ScopedCwd;
using testing_util::WriteText;

// The message of the kiln::Error `fn` throws ("" and a failure when it throws none).
std::string ErrorOf(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  ADD_FAILURE() << "no kiln::Error thrown";
  return "";
}

class HfCache : public HubCacheTest {
 protected:
  std::string Resolve(const std::string& value) { return ResolveModelPath(value, Env()); }
  std::string ResolveError(const std::string& value) {
    return ErrorOf([&] { Resolve(value); });
  }
};

TEST_F(HfCache, RevisionsGoThroughRefsAndCommitsNameSnapshots) {
  const auto main = AddSnapshot("org/name", Commit(1), {"main.gguf"});
  const auto tag = AddSnapshot("org/name", Commit(2), {"tag.gguf"});
  const auto pr = AddSnapshot("org/name", Commit(3), {"pr.gguf"});
  const auto detached = AddSnapshot("org/name", Commit(4), {"detached.gguf"});
  AddRef("org/name", "main", Commit(1));
  AddRef("org/name", "v1.0", Commit(2));
  AddRef("org/name", "refs/pr/1", Commit(3));  // revision "refs/pr/1" -> refs/refs/pr/1
  EXPECT_EQ(Resolve("org/name"), (main / "main.gguf").string());
  EXPECT_EQ(Resolve("org/name@main"), (main / "main.gguf").string());
  EXPECT_EQ(Resolve("org/name@v1.0"), (tag / "tag.gguf").string());
  EXPECT_EQ(Resolve("org/name@refs/pr/1"), (pr / "pr.gguf").string());
  EXPECT_EQ(Resolve("org/name@" + Commit(4)), (detached / "detached.gguf").string());
}

TEST_F(HfCache, RefWithTrailingNewlineIsRead) {
  const auto snapshot = AddSnapshot("org/name", Commit(1), {"m.gguf"});
  WriteText(Repo("org/name") / "refs" / "main", Commit(1) + "\n");
  EXPECT_EQ(Resolve("org/name"), (snapshot / "m.gguf").string());
}

TEST_F(HfCache, IdWithoutOrg) {
  const auto snapshot = AddSnapshot("gpt2", Commit(1), {"gpt2.gguf"});
  AddRef("gpt2", "main", Commit(1));
  EXPECT_TRUE(fs::is_directory(root_ / "models--gpt2"));
  EXPECT_EQ(Resolve("gpt2"), (snapshot / "gpt2.gguf").string());
}

TEST_F(HfCache, HfModelFolderIsTheSnapshotItself) {
  const auto single = AddSnapshot("org/a", Commit(1), {"config.json", "model.safetensors"});
  const auto sharded = AddSnapshot(
      "org/b", Commit(2),
      {"config.json", "model.safetensors.index.json", "model-00001-of-00002.safetensors"});
  const auto both =
      AddSnapshot("org/c", Commit(3), {"config.json", "model.safetensors", "gguf/model-Q8_0.gguf"});
  AddRef("org/a", "main", Commit(1));
  AddRef("org/b", "main", Commit(2));
  AddRef("org/c", "main", Commit(3));
  EXPECT_EQ(Resolve("org/a"), single.string());
  EXPECT_EQ(Resolve("org/b"), sharded.string());
  EXPECT_EQ(Resolve("org/c"), both.string());  // the folder unless a :file asks for a GGUF
  EXPECT_EQ(Resolve("org/c:Q8_0"), (both / "gguf" / "model-Q8_0.gguf").string());
}

TEST_F(HfCache, OneGgufIsPickedSeveralNeedAChoice) {
  const auto s = AddSnapshot("org/q", Commit(1),
                             {"README.md", "q-Q4_K_M.gguf", "q-Q8_0.gguf", "big/q-F16.gguf"});
  AddRef("org/q", "main", Commit(1));
  EXPECT_THAT(ResolveError("org/q"),
              AllOf(HasSubstr(s.string()), HasSubstr("holds 3 GGUF files"), HasSubstr(":FILE"),
                    HasSubstr("big/q-F16.gguf, q-Q4_K_M.gguf, q-Q8_0.gguf")));
  EXPECT_EQ(Resolve("org/q:q-Q8_0.gguf"), (s / "q-Q8_0.gguf").string());            // file name
  EXPECT_EQ(Resolve("org/q:big/q-F16.gguf"), (s / "big" / "q-F16.gguf").string());  // path
  EXPECT_EQ(Resolve("org/q:q4_k_m"), (s / "q-Q4_K_M.gguf").string());  // part, any case
  EXPECT_EQ(Resolve("org/q@main:F16"), (s / "big" / "q-F16.gguf").string());
  EXPECT_THAT(ResolveError("org/q:Q5_K"),
              AllOf(HasSubstr("no GGUF file matching ':Q5_K'"), HasSubstr("q-Q8_0.gguf")));
  EXPECT_THAT(ResolveError("org/q:q-Q"),
              AllOf(HasSubstr("matches 2 GGUF files"), HasSubstr("q-Q4_K_M.gguf, q-Q8_0.gguf")));
}

TEST_F(HfCache, SnapshotWithoutModelFilesListsWhatItHas) {
  AddSnapshot("org/docs", Commit(1), {"README.md", "config.json"});
  AddRef("org/docs", "main", Commit(1));
  EXPECT_THAT(ResolveError("org/docs"), AllOf(HasSubstr("neither a Hugging Face model folder"),
                                              HasSubstr("README.md, config.json")));
}

TEST_F(HfCache, MissingBlobIsNamed) {
  const auto s = AddSnapshot("org/cut", Commit(1), {"m.gguf"});
  AddRef("org/cut", "main", Commit(1));
  fs::remove_all(Repo("org/cut") / "blobs");
  EXPECT_THAT(ResolveError("org/cut"),
              AllOf(HasSubstr((s / "m.gguf").string()), HasSubstr("missing blob")));
}

TEST_F(HfCache, MissingRepoNamesRootFolderAndHowToFetch) {
  const std::string message = ResolveError("org/absent@v2");
  EXPECT_THAT(message,
              AllOf(HasSubstr("org/absent@v2: no such local file or directory"),
                    HasSubstr("no repo folder " + (root_ / "models--org--absent").string()),
                    HasSubstr("cache root " + root_.string() + ", from HF_HUB_CACHE"),
                    HasSubstr("hf download org/absent --revision v2 --cache-dir"),
                    HasSubstr("huggingface-cli download"), Not(HasSubstr("OFFLINE"))));
  vars_["HF_HUB_OFFLINE"] = "1";
  EXPECT_THAT(ResolveError("org/absent"),
              AllOf(HasSubstr("HF_HUB_OFFLINE is set"), HasSubstr("hf download org/absent")));
}

TEST_F(HfCache, MissingRefNamesTheRefFileAndTheRefsPresent) {
  AddSnapshot("org/name", Commit(1), {"m.gguf"});
  AddRef("org/name", "main", Commit(1));
  AddRef("org/name", "refs/pr/1", Commit(1));
  const std::string message = ResolveError("org/name@v9");
  EXPECT_THAT(message, AllOf(HasSubstr("no ref " + (Repo("org/name") / "refs" / "v9").string()),
                             HasSubstr("refs present: main, refs/pr/1"),
                             HasSubstr("hf download org/name --revision v9")));
  // A commit is only ever taken whole: a short hash is looked up as a ref name and missed.
  EXPECT_THAT(ResolveError("org/name@aaaa"), HasSubstr("full 40-hex hash"));
}

TEST_F(HfCache, MissingSnapshotNamesRefCommitAndPath) {
  AddSnapshot("org/name", Commit(1), {"m.gguf"});
  AddRef("org/name", "main", Commit(2));
  const fs::path snapshot = Repo("org/name") / "snapshots" / Commit(2);
  EXPECT_THAT(ResolveError("org/name"),
              AllOf(HasSubstr("ref " + (Repo("org/name") / "refs" / "main").string() +
                              " names commit " + Commit(2)),
                    HasSubstr("no snapshot folder " + snapshot.string()),
                    HasSubstr("snapshots present: " + Commit(1))));
  EXPECT_THAT(ResolveError("org/name@" + Commit(3)),
              AllOf(HasSubstr("commit " + Commit(3)), HasSubstr("no snapshot folder")));
}

TEST_F(HfCache, RefThatIsNoCommitIsRefused) {
  AddSnapshot("org/name", Commit(1), {"m.gguf"});
  WriteText(root_ / "escaped" / "m.gguf", "outside");
  AddRef("org/name", "main", "../../../escaped");
  EXPECT_THAT(ResolveError("org/name"), HasSubstr("not a 40-hex commit hash"));
}

TEST_F(HfCache, LocalPathWinsOverHubId) {
  const auto snapshot = AddSnapshot("org/name", Commit(1), {"m.gguf"});
  AddRef("org/name", "main", Commit(1));
  {
    ScopedCwd cwd(base_ / "work");
    EXPECT_EQ(Resolve("org/name"), (snapshot / "m.gguf").string());
    fs::create_directories("org/name");
    EXPECT_EQ(Resolve("org/name"), "org/name");
  }
  const fs::path file = base_ / "x.gguf";
  WriteText(file, "gguf");
  EXPECT_EQ(Resolve(file.string()), file.string());
}

TEST_F(HfCache, MalformedIdsAreRefusedBeforeAnyLookup) {
  // None is an id huggingface_hub accepts; taken as paths, several would name folders outside
  // models--{org}--{name}.
  const char* const bad_ids[] = {"a/b/c",
                                 "..",
                                 "org/../x",
                                 "../x",
                                 "/abs/path",
                                 "org/..",
                                 ".hidden",
                                 "org/name@",
                                 "org/name:",
                                 "org/name@../../x",
                                 "org/name@a/../b",
                                 "org/name@/main",
                                 "org/name@a//b",
                                 "org/name@ma in",
                                 "org--x/y",
                                 "-org/x",
                                 "org/x-",
                                 "org/x.git",
                                 "org/n@me@{1}",
                                 "~/x",
                                 "org/na me",
                                 "org/\xc3\xa9t\xc3\xa9",
                                 "org/name@v1.lock",
                                 "x/.git"};
  for (const char* bad : bad_ids) {
    EXPECT_THAT(ErrorOf([&] { ParseHubId(bad); }), HasSubstr("not a Hugging Face Hub id")) << bad;
  }
  EXPECT_THAT(ErrorOf([] { ParseHubId(""); }), HasSubstr("not a Hugging Face Hub id: it is empty"));
  // Through ResolveModelPath, from a folder where none of them exists as a path ("..", which
  // always does, is a local path and wins).
  ScopedCwd cwd(base_ / "empty");
  for (const char* bad : bad_ids) {
    if (std::string(bad) == "..") continue;
    EXPECT_THAT(ResolveError(bad), AllOf(HasSubstr("no such file or directory"),
                                         HasSubstr("not a Hugging Face Hub id")))
        << bad;
  }
}

TEST_F(HfCache, AcceptedIdsResolveInsideTheirRepoFolder) {
  const char* const good_ids[] = {
      "a/b",    "gpt2", "A_b.c-d/e.f", "org/x@refs/pr/12", "o/x@v1.0:f.gguf", "o/y@feature/a-b",
      "o/z@v@1"};
  int n = 0;
  for (const char* good : good_ids) {
    const HubId id = ParseHubId(good);
    AddSnapshot(id.repo_id, Commit(++n), {"f.gguf"});
    AddRef(id.repo_id, id.revision, Commit(n));
    const std::string prefix = (Repo(id.repo_id) / "snapshots" / Commit(n)).string() + "/";
    EXPECT_EQ(Resolve(good), prefix + "f.gguf") << good;
    EXPECT_EQ(fs::path(Repo(id.repo_id)).parent_path(), root_) << good;
  }
}

}  // namespace
}  // namespace kiln::hub
