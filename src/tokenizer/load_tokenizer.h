// The factory the commands use: a tokenizer for a model path, from whichever source it has.
#pragma once

#include <memory>
#include <string>

#include "tokenizer/tokenizer.h"

namespace kiln {

// `path`: a .gguf file (its tokenizer.ggml.* vocabulary), a directory with tokenizer.json
// (plus tokenizer_config.json when present), or a tokenizer.json file (its folder's
// tokenizer_config.json is read too). Throws kiln::Error naming the path when none is usable.
std::unique_ptr<Tokenizer> LoadTokenizer(const std::string& path);

// Whether `path` is a directory with a tokenizer.json.
bool HasHfTokenizer(const std::string& path);

}  // namespace kiln
