#include "tokenizer/hf/pattern.h"

#include "util/error.h"

namespace kiln::hf {

Regex MakePattern(const Json& obj, const std::string& where) {
  const Json& p = Field(obj, "pattern", where);
  const std::string path = FieldPath(where, "pattern");
  CheckObject(p, path);
  if (const Json* s = OptField(p, "String"))
    return Regex::Literal(AsString(*s, path + ".String"), path);
  if (const Json* r = OptField(p, "Regex")) return Regex(AsString(*r, path + ".Regex"), path);
  throw Error(StrCat(path, ": expected {\"String\": ...} or {\"Regex\": ...}"));
}

}  // namespace kiln::hf
