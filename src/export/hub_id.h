// Hugging Face Hub model ids as Kiln accepts them: `org/name[@revision][:file]`.
//
// The repo id follows huggingface_hub's validate_repo_id (ASCII letters, digits, '_', '-', '.';
// at most one '/'; no "--" or ".."), and the revision git's ref-name rules, so that neither can
// name a folder outside `models--{org}--{name}/` once turned into cache paths. `:file` picks one
// GGUF of a repo that holds several (llama.cpp's `-hf org/name:quant` idea).
#pragma once

#include <string>
#include <string_view>

namespace kiln::hub {

inline constexpr std::string_view kDefaultRevision = "main";

struct HubId {
  std::string repo_id;                     // "org/name", or "name" (e.g. "gpt2")
  std::string revision{kDefaultRevision};  // branch, tag, "refs/pr/N" or a commit hash
  std::string file;                        // the `:file` suffix; empty when not given
};

// Throws kiln::Error naming what is wrong with `text`.
HubId ParseHubId(std::string_view text);

// Why `repo_id` / `revision` is not acceptable, or "" when it is.
std::string RepoIdProblem(std::string_view repo_id);
std::string RevisionProblem(std::string_view revision);

// A full commit hash (40 lowercase hex digits), which huggingface_hub uses as a snapshot
// folder name directly instead of looking it up under refs/.
bool IsCommitHash(std::string_view revision);

// The cache folder of a model repo: "models--org--name" ("models--gpt2" without an org).
std::string RepoFolderName(std::string_view repo_id);

// `org/name@revision:file`, leaving out what was not given (the revision when it is "main").
std::string Describe(const HubId& id);

}  // namespace kiln::hub
