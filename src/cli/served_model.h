// What `kiln serve` and `kiln generate` load for --model-id: a Kiln artifact as it is; any other
// source through the compiled-model cache (export/model_cache.h: exported once, then mapped),
// or straight from the source with --no-model-cache. The tokenizer comes from the same place.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "model/model.h"
#include "tokenizer/tokenizer.h"

namespace kiln {

struct ModelSourceOptions {
  std::string dtype = "source";  // export options of the cache entry (kiln export --help)
  std::string target = "native";
  bool no_model_cache = false;
  std::string cache_dir;  // default: ModelCache::DefaultRoot
};

struct ServedModel {
  std::unique_ptr<Model> model;
  std::unique_ptr<Tokenizer> tokenizer;
  std::string path;              // what was mapped: the artifact, or the source itself
  nlohmann::json artifact_info;  // /info's "kiln_artifact"; null when not from an artifact
};

// `source`: a path ResolveModelId returned.
ServedModel LoadServedModel(const std::string& source, const ModelSourceOptions& options);

// The model's tokenizer: its GGUF metadata, its artifact's tokenizer.json, or the folder's;
// nullptr when it has none.
std::unique_ptr<Tokenizer> FindModelTokenizer(const Model& model, const std::string& path);

// Bytes of the weights mapped from `path`: the file's size, or a folder's *.safetensors and
// *.gguf files together (/v1/status's weight_bytes); 0 when unreadable.
int64_t WeightFileBytes(const std::string& path);

// --dtype, --target, --no-model-cache, --model-cache.
void AddModelSourceFlags(CLI::App* cmd, ModelSourceOptions& options);

}  // namespace kiln
