// Model ids resolved from the local Hugging Face cache, in the layout huggingface_hub writes
// (file_download.py, _snapshot_download.py):
//
//   {cache root}/models--{org}--{name}/
//     refs/{revision}          the commit a branch or tag (or refs/pr/N) pointed at when fetched
//     snapshots/{commit}/...   the repo's files at that commit, symlinks into blobs/
//     blobs/{etag}             the contents
//
// Kiln does not download: an id that is not in the cache is an error that says what was looked
// for and how to fetch it (`hf download org/name`).
#pragma once

#include <string>

#include "export/hf_cache_env.h"
#include "export/hub_id.h"

namespace kiln::hub {

struct Snapshot {
  std::string repo_dir;  // {root}/models--{org}--{name}
  std::string commit;    // the revision itself, or what refs/{revision} holds
  std::string dir;       // {repo_dir}/snapshots/{commit}
};

// The snapshot folder of `id`, found as snapshot_download does without network: a commit hash
// names its snapshot directly, anything else is read from refs/. Throws kiln::Error naming the
// cache root, repo folder, ref and snapshot path it looked at.
Snapshot FindSnapshot(const CacheRoot& root, const HubId& id);

// What Model::Load gets for a snapshot: the folder itself when it is a Hugging Face model
// folder (config.json with model.safetensors or model.safetensors.index.json) and no `:file`
// was given; else its one GGUF file, or the one `id.file` picks by path, file name or a part of
// the name (e.g. a quant type: `:Q4_K_M`). Throws kiln::Error listing the candidates.
std::string ModelPathInSnapshot(const Snapshot& snapshot, const HubId& id);

// `value` itself when it names an existing file or folder (local paths always win); else
// `value` parsed as a Hub id and resolved through the cache of `env`.
std::string ResolveModelPath(const std::string& value, const GetEnv& env);

}  // namespace kiln::hub
