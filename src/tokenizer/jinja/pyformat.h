// Python's text forms of values: float repr, str repr and json.dumps, byte for byte, since chat
// templates print numbers and lists directly and serialize tools with |tojson.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "tokenizer/jinja/value.h"

namespace kiln::jinja {

std::string FloatRepr(double d);          // repr(float): 1.0, 0.1, 1e+16, inf, nan
std::string StrRepr(std::string_view s);  // repr(str): 'a', "it's", '\n'

struct JsonOptions {
  std::optional<std::string> indent;  // json.dumps(indent=...) as the text of one level
  std::optional<std::string> item_separator;
  std::optional<std::string> key_separator;
  bool sort_keys = false;
  bool ensure_ascii = false;  // transformers' tojson defaults to False
};

// json.dumps(v, ...); throws for undefined values and objects, as Python's "not JSON serializable".
std::string ToJson(const Value& v, const JsonOptions& options);

}  // namespace kiln::jinja
