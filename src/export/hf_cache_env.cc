#include "export/hf_cache_env.h"

#include <pwd.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <vector>

namespace kiln::hub {
namespace {

namespace fs = std::filesystem;

// The home folder of `user` (nullptr: of this process's uid) from the passwd database.
std::optional<std::string> PasswdHome(const char* user) {
  long size = sysconf(_SC_GETPW_R_SIZE_MAX);
  std::vector<char> buffer(size > 0 ? static_cast<size_t>(size) : 16384);
  passwd entry{};
  passwd* found = nullptr;
  const int rc = user == nullptr
                     ? getpwuid_r(getuid(), &entry, buffer.data(), buffer.size(), &found)
                     : getpwnam_r(user, &entry, buffer.data(), buffer.size(), &found);
  if (rc != 0 || found == nullptr || entry.pw_dir == nullptr) return std::nullopt;
  return std::string(entry.pw_dir);
}

// A variable that is set to something: empty values count as unset for the cache rules.
std::optional<std::string> NonEmpty(const GetEnv& env, const char* name) {
  std::optional<std::string> value = env(name);
  if (value && value->empty()) return std::nullopt;
  return value;
}

// expandvars(expanduser(path)), the order constants.py applies them in.
std::string Expand(const std::string& path, const GetEnv& env) {
  return ExpandVars(ExpandUser(path, env), env);
}

bool IsNameChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

}  // namespace

GetEnv ProcessEnv() {
  return [](const std::string& name) -> std::optional<std::string> {
    const char* value = std::getenv(name.c_str());
    if (value == nullptr) return std::nullopt;
    return std::string(value);
  };
}

std::string ExpandUser(const std::string& path, const GetEnv& env) {
  if (path.empty() || path[0] != '~') return path;
  const size_t slash = std::min(path.find('/', 1), path.size());
  std::optional<std::string> home;
  if (slash == 1) {
    home = NonEmpty(env, "HOME");
    if (!home) home = PasswdHome(nullptr);
  } else {
    home = PasswdHome(path.substr(1, slash - 1).c_str());
  }
  if (!home) return path;
  while (!home->empty() && home->back() == '/') home->pop_back();
  std::string out = *home + path.substr(slash);
  return out.empty() ? "/" : out;
}

std::string ExpandVars(const std::string& path, const GetEnv& env) {
  std::string out;
  size_t i = 0;
  while (i < path.size()) {
    size_t end = i + 1;
    std::string name;
    if (path[i] == '$' && end < path.size() && path[end] == '{') {
      const size_t close = path.find('}', end + 1);
      if (close != std::string::npos) {
        name = path.substr(end + 1, close - end - 1);
        end = close + 1;
      }
    } else if (path[i] == '$') {
      while (end < path.size() && IsNameChar(path[end])) ++end;
      name = path.substr(i + 1, end - i - 1);
    }
    std::optional<std::string> value;
    if (end > i + 1) value = env(name);  // "${}" asks for the variable "", which is never set
    out += value ? *value : path.substr(i, end - i);
    i = end;
  }
  return out;
}

CacheRoot HubCacheRoot(const GetEnv& env) {
  if (auto v = NonEmpty(env, "HF_HUB_CACHE")) return {Expand(*v, env), "HF_HUB_CACHE"};
  if (auto v = NonEmpty(env, "HUGGINGFACE_HUB_CACHE")) {
    return {Expand(*v, env), "HUGGINGFACE_HUB_CACHE (legacy name of HF_HUB_CACHE)"};
  }
  if (auto v = NonEmpty(env, "HF_HOME")) {
    return {(fs::path(Expand(*v, env)) / "hub").string(), "$HF_HOME/hub"};
  }
  if (auto v = NonEmpty(env, "XDG_CACHE_HOME")) {
    return {(fs::path(Expand(*v, env)) / "huggingface" / "hub").string(),
            "$XDG_CACHE_HOME/huggingface/hub"};
  }
  return {(fs::path(Expand("~/.cache", env)) / "huggingface" / "hub").string(),
          "~/.cache/huggingface/hub: HF_HUB_CACHE, HF_HOME and XDG_CACHE_HOME are unset"};
}

bool HubOffline(const GetEnv& env) {
  // constants.py: os.environ.get("HF_HUB_OFFLINE") or os.environ.get("TRANSFORMERS_OFFLINE")
  std::optional<std::string> value = NonEmpty(env, "HF_HUB_OFFLINE");
  if (!value) value = NonEmpty(env, "TRANSFORMERS_OFFLINE");
  if (!value) return false;
  std::string upper = *value;
  for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return upper == "1" || upper == "ON" || upper == "YES" || upper == "TRUE";
}

}  // namespace kiln::hub
