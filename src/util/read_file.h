// A whole file read into memory, for the small text files next to a model (config.json,
// tokenizer.json, ...). Weights are mapped instead (mmap_file.h).
#pragma once

#include <string>

namespace kiln {

// The file's bytes; throws kiln::Error "PATH: cannot open" / "PATH: read failed".
std::string ReadFileText(const std::string& path);

}  // namespace kiln
