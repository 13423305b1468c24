// Where the Hugging Face cache lives and whether the Hub may be reached, read from the
// environment with huggingface_hub's rules (constants.py), so Kiln finds what `hf download`,
// transformers and TGI put there.
#pragma once

#include <functional>
#include <optional>
#include <string>

namespace kiln::hub {

// An environment lookup, nullopt when unset: the process's (ProcessEnv), or a map in tests.
using GetEnv = std::function<std::optional<std::string>(const std::string& name)>;
GetEnv ProcessEnv();

struct CacheRoot {
  std::string path;    // the hub cache folder that holds models--{org}--{name}/
  std::string source;  // which rule chose it, for messages: "HF_HUB_CACHE", "HF_HOME/hub", ...
};

// HF_HUB_CACHE, else the legacy HUGGINGFACE_HUB_CACHE, else $HF_HOME/hub, else
// $XDG_CACHE_HOME/huggingface/hub, else ~/.cache/huggingface/hub; '~' and $VARS expanded.
// A variable set to "" counts as unset here, where huggingface_hub would take an empty HF_HOME
// as the relative folder "hub".
CacheRoot HubCacheRoot(const GetEnv& env);

// HF_HUB_OFFLINE, or TRANSFORMERS_OFFLINE when HF_HUB_OFFLINE is unset, is 1/ON/YES/TRUE
// (any case).
bool HubOffline(const GetEnv& env);

// Python's os.path.expanduser: a leading "~" or "~/" is $HOME (if empty or unset, the passwd
// entry's home),
// "~user" that user's home; anything else, or an unknown user, is left as is.
std::string ExpandUser(const std::string& path, const GetEnv& env);

// Python's os.path.expandvars: $NAME and ${NAME} (NAME of [A-Za-z0-9_]) are replaced by the
// variable's value when it is set; otherwise left as written.
std::string ExpandVars(const std::string& path, const GetEnv& env);

}  // namespace kiln::hub
