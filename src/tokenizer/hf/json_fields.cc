#include "tokenizer/hf/json_fields.h"

#include <vector>

#include "tokenizer/hf/text.h"
#include "util/error.h"
#include "util/json_depth.h"

namespace kiln::hf {

Json ParseJson(std::string_view text, const std::string& source) {
  if (JsonNestingDepth(text, kMaxJsonDepth) > kMaxJsonDepth) {
    throw Error(
        StrCat(source, ": not valid JSON: nested deeper than ", kMaxJsonDepth, " levels"));
  }
  try {
    return Json::parse(text);
  } catch (const Json::exception& e) {
    throw Error(StrCat(source, ": not valid JSON: ", e.what()));
  }
}

std::string FieldPath(std::string_view where, std::string_view key) {
  return StrCat(std::string(where), ".", std::string(key));
}

void CheckObject(const Json& j, std::string_view where) {
  KILN_CHECK(j.is_object(), std::string(where), ": expected an object, got ", j.type_name());
}

const Json* OptField(const Json& obj, std::string_view key) {
  if (!obj.is_object()) return nullptr;
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return nullptr;
  return &*it;
}

const Json& Field(const Json& obj, std::string_view key, std::string_view where) {
  CheckObject(obj, where);
  const Json* f = OptField(obj, key);
  KILN_CHECK(f != nullptr, FieldPath(where, key), ": missing");
  return *f;
}

const std::string& AsString(const Json& j, std::string_view where) {
  KILN_CHECK(j.is_string(), std::string(where), ": expected a string, got ", j.type_name());
  return j.get_ref<const std::string&>();
}

std::string GetString(const Json& obj, std::string_view key, std::string_view where) {
  return AsString(Field(obj, key, where), FieldPath(where, key));
}

std::optional<std::string> OptString(const Json& obj, std::string_view key,
                                     std::string_view where) {
  const Json* f = OptField(obj, key);
  if (f == nullptr) return std::nullopt;
  return AsString(*f, FieldPath(where, key));
}

bool OptBool(const Json& obj, std::string_view key, std::string_view where, bool def) {
  const Json* f = OptField(obj, key);
  if (f == nullptr) return def;
  KILN_CHECK(f->is_boolean(), FieldPath(where, key), ": expected true or false, got ",
             f->type_name());
  return f->get<bool>();
}

int64_t AsInt(const Json& j, std::string_view where, int64_t min, int64_t max) {
  KILN_CHECK(j.is_number_integer(), std::string(where), ": expected an integer, got ",
             j.type_name());
  int64_t v = 0;
  if (j.is_number_unsigned()) {
    const uint64_t u = j.get<uint64_t>();
    KILN_CHECK(u <= static_cast<uint64_t>(max), std::string(where), ": ", u, " is out of range");
    v = static_cast<int64_t>(u);
  } else {
    v = j.get<int64_t>();
  }
  KILN_CHECK(v >= min && v <= max, std::string(where), ": ", v, " is out of range [", min, ", ",
             max, "]");
  return v;
}

int64_t GetInt(const Json& obj, std::string_view key, std::string_view where, int64_t min,
               int64_t max) {
  return AsInt(Field(obj, key, where), FieldPath(where, key), min, max);
}

int64_t OptInt(const Json& obj, std::string_view key, std::string_view where, int64_t min,
               int64_t max, int64_t def) {
  const Json* f = OptField(obj, key);
  return f == nullptr ? def : AsInt(*f, FieldPath(where, key), min, max);
}

uint32_t GetChar(const Json& obj, std::string_view key, std::string_view where) {
  const std::string s = GetString(obj, key, where);
  std::vector<uint32_t> cps;
  ToCodepoints(s, &cps);
  KILN_CHECK(cps.size() == 1, FieldPath(where, key), ": expected one character, got '", s, "'");
  return cps[0];
}

std::string TypeOf(const Json& obj, std::string_view where) {
  return GetString(obj, "type", where);
}

}  // namespace kiln::hf
