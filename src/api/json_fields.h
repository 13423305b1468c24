// Typed, checked reads of the fields of one JSON object. Absent and null fields read as unset
// (serde's Option, which TGI clients rely on: text_generation sends every parameter, most as
// null). A value of the wrong type or out of its type's range throws a 422 ApiError naming the
// field by path ("parameters.top_k"), worded like serde so messages match TGI's.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kiln::api {

class JsonFields {
 public:
  // Throws WrongTypeError when `obj` is not an object; `path` prefixes field names in errors.
  JsonFields(const nlohmann::json& obj, std::string path);

  // The field's value, or nullptr when it is absent or null.
  const nlohmann::json* Get(std::string_view key) const;
  bool Has(std::string_view key) const { return Get(key) != nullptr; }
  // "parameters.key", for error messages.
  std::string PathOf(std::string_view key) const;

  std::optional<bool> Bool(std::string_view key) const;
  // Integers; a float with an integral value is accepted. `type` names the range in messages
  // ("u32", "i32", "usize").
  std::optional<int64_t> Int(std::string_view key, int64_t min, int64_t max,
                             const char* type) const;
  std::optional<int32_t> I32(std::string_view key) const;
  std::optional<int32_t> U32(std::string_view key) const;  // 0..INT32_MAX (u32 past that)
  // Any JSON integer in [INT64_MIN, UINT64_MAX], mapped onto uint64 (seeds).
  std::optional<uint64_t> Seed(std::string_view key, bool allow_negative) const;
  // A finite number that fits a float (f32).
  std::optional<float> F32(std::string_view key) const;
  std::optional<std::string> String(std::string_view key) const;
  // A list of strings; with `allow_single`, a lone string counts as a list of one.
  std::optional<std::vector<std::string>> StringList(std::string_view key, bool allow_single) const;
  std::optional<std::vector<int32_t>> IntList(std::string_view key, int64_t min, int64_t max) const;

 private:
  const nlohmann::json& obj_;
  std::string path_;
};

// A JSON list of integers in [min, max], `path` naming it in errors.
std::vector<int32_t> ReadIntList(const nlohmann::json& v, const std::string& path, int64_t min,
                                 int64_t max);

// "string", "integer `5`", "floating point `0.5`", "boolean", "sequence", "map", like serde.
std::string DescribeJsonValue(const nlohmann::json& v);

}  // namespace kiln::api
