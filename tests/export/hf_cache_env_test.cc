// The cache root and offline switch from the environment, with huggingface_hub's precedence
// (constants.py), and the Python path expansions it applies.
#include "export/hf_cache_env.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <optional>
#include <string>

#include "export/hf_cache.h"
#include "export/hf_cache_test_util.h"

namespace kiln::hub {
namespace {

namespace fs = std::filesystem;
using testing_util::Commit;
using testing_util::HubCacheTest;

GetEnv MapEnv(std::map<std::string, std::string> vars) {
  return [vars = std::move(vars)](const std::string& name) -> std::optional<std::string> {
    auto it = vars.find(name);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

TEST(HubCacheRoot, PrecedenceHubCacheThenLegacyThenHfHomeThenXdgThenHome) {
  std::map<std::string, std::string> vars = {{"HF_HUB_CACHE", "/a"},
                                             {"HUGGINGFACE_HUB_CACHE", "/b"},
                                             {"HF_HOME", "/c"},
                                             {"XDG_CACHE_HOME", "/d"},
                                             {"HOME", "/e"}};
  EXPECT_EQ(HubCacheRoot(MapEnv(vars)).path, "/a");
  EXPECT_EQ(HubCacheRoot(MapEnv(vars)).source, "HF_HUB_CACHE");
  vars.erase("HF_HUB_CACHE");
  EXPECT_EQ(HubCacheRoot(MapEnv(vars)).path, "/b");
  vars.erase("HUGGINGFACE_HUB_CACHE");
  EXPECT_EQ(HubCacheRoot(MapEnv(vars)).path, "/c/hub");
  vars.erase("HF_HOME");
  EXPECT_EQ(HubCacheRoot(MapEnv(vars)).path, "/d/huggingface/hub");
  vars.erase("XDG_CACHE_HOME");
  EXPECT_EQ(HubCacheRoot(MapEnv(vars)).path, "/e/.cache/huggingface/hub");
}

TEST(HubCacheRoot, EmptyValuesCountAsUnset) {
  EXPECT_EQ(HubCacheRoot(MapEnv({{"HF_HUB_CACHE", ""}, {"HF_HOME", "/h/"}})).path, "/h/hub");
  EXPECT_EQ(HubCacheRoot(MapEnv({{"HF_HOME", ""}, {"XDG_CACHE_HOME", "/x"}})).path,
            "/x/huggingface/hub");
}

TEST(HubCacheRoot, ExpandsUserAndVariables) {
  EXPECT_EQ(HubCacheRoot(MapEnv({{"HF_HUB_CACHE", "~/hf"}, {"HOME", "/home/u/"}})).path,
            "/home/u/hf");
  EXPECT_EQ(
      HubCacheRoot(MapEnv({{"HF_HOME", "$DATA/${WHO}_hf"}, {"DATA", "/d"}, {"WHO", "me"}})).path,
      "/d/me_hf/hub");
  EXPECT_EQ(HubCacheRoot(MapEnv({{"XDG_CACHE_HOME", "~/c"}, {"HOME", "/u"}})).path,
            "/u/c/huggingface/hub");
}

TEST(ExpandVars, LikePythonsOsPathExpandvars) {
  const GetEnv env = MapEnv({{"A", "1"}, {"B_2", "two"}, {"EMPTY", ""}});
  EXPECT_EQ(ExpandVars("$A/${B_2}/$B_2x/$EMPTY.", env), "1/two/$B_2x/.");
  EXPECT_EQ(ExpandVars("$ $/ ${} ${A $UNSET ${UNSET} ${A", env),
            "$ $/ ${} ${A $UNSET ${UNSET} ${A");
  EXPECT_EQ(ExpandVars("a$A$A", env), "a11");
  EXPECT_EQ(ExpandVars("no vars", env), "no vars");
}

TEST(ExpandUser, LikePythonsOsPathExpanduser) {
  const GetEnv env = MapEnv({{"HOME", "/home/me/"}});
  EXPECT_EQ(ExpandUser("~", env), "/home/me");
  EXPECT_EQ(ExpandUser("~/x", env), "/home/me/x");
  EXPECT_EQ(ExpandUser("/a/~", env), "/a/~");
  EXPECT_EQ(ExpandUser("~no_such_user_kiln/x", env), "~no_such_user_kiln/x");
  EXPECT_EQ(ExpandUser("~root/x", env), "/root/x");
  EXPECT_EQ(ExpandUser("~/x", MapEnv({{"HOME", "/"}})), "/x");
  EXPECT_FALSE(ExpandUser("~", MapEnv({})).empty());  // the passwd entry's home
}

TEST(HubOffline, TrueValuesAndTransformersFallback) {
  for (const char* on : {"1", "ON", "yes", "True"}) {
    EXPECT_TRUE(HubOffline(MapEnv({{"HF_HUB_OFFLINE", on}}))) << on;
  }
  for (const char* off : {"0", "", "off", "no", "2"}) {
    EXPECT_FALSE(HubOffline(MapEnv({{"HF_HUB_OFFLINE", off}}))) << off;
  }
  EXPECT_TRUE(HubOffline(MapEnv({{"TRANSFORMERS_OFFLINE", "1"}})));
  // `HF_HUB_OFFLINE or TRANSFORMERS_OFFLINE`: a set HF_HUB_OFFLINE decides alone.
  EXPECT_FALSE(HubOffline(MapEnv({{"HF_HUB_OFFLINE", "0"}, {"TRANSFORMERS_OFFLINE", "1"}})));
  EXPECT_FALSE(HubOffline(MapEnv({})));
}

class EnvPrecedence : public HubCacheTest {};

TEST_F(EnvPrecedence, ResolutionUsesTheRootTheEnvironmentPicks) {
  // The same id cached under three roots, each with its own commit: the winner's is used.
  const fs::path hub_cache = root_, hf_home = base_ / "home", xdg = base_ / "xdg";
  int n = 0;
  for (const fs::path& root : {hub_cache, hf_home / "hub", xdg / "huggingface" / "hub"}) {
    root_ = root;
    AddSnapshot("org/name", Commit(++n), {"m.gguf"});
    AddRef("org/name", "main", Commit(n));
  }
  vars_ = {{"HF_HUB_CACHE", hub_cache.string()},
           {"HF_HOME", hf_home.string()},
           {"XDG_CACHE_HOME", xdg.string()}};
  EXPECT_NE(ResolveModelPath("org/name", Env()).find(Commit(1)), std::string::npos);
  vars_.erase("HF_HUB_CACHE");
  EXPECT_NE(ResolveModelPath("org/name", Env()).find(Commit(2)), std::string::npos);
  vars_.erase("HF_HOME");
  EXPECT_NE(ResolveModelPath("org/name", Env()).find(Commit(3)), std::string::npos);
}

}  // namespace
}  // namespace kiln::hub
