// The "pattern" field shared by the Replace normalizer, the Split pre-tokenizer and the Replace
// decoder: {"String": "literal"} or {"Regex": "onig regex"}.
#pragma once

#include <string>

#include "tokenizer/hf/json_fields.h"
#include "tokenizer/hf/regex.h"

namespace kiln::hf {

// Reads obj["pattern"]; throws kiln::Error naming `where` when it is malformed.
Regex MakePattern(const Json& obj, const std::string& where);

}  // namespace kiln::hf
