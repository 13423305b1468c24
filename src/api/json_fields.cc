#include "api/json_fields.h"

#include <cmath>
#include <limits>

#include "api/api_error.h"
#include "util/error.h"

namespace kiln::api {
namespace {

std::string FormatNumber(const nlohmann::json& v) { return v.dump(); }

[[noreturn]] void WrongType(const std::string& path, const nlohmann::json& v,
                            std::string_view expected) {
  throw WrongTypeError(
      path, StrCat("invalid type: ", DescribeJsonValue(v), ", expected ", std::string(expected)));
}

[[noreturn]] void OutOfRange(const std::string& path, const nlohmann::json& v,
                             std::string_view expected) {
  const char* kind = v.is_number_float() ? "floating point" : "integer";
  throw WrongTypeError(path, StrCat("invalid value: ", kind, " `", FormatNumber(v), "`, expected ",
                                    std::string(expected)));
}

// Integer value of `v` as a long double (exact for every int64/uint64), when v is an integer
// or an integral float.
std::optional<long double> IntegralValue(const nlohmann::json& v) {
  if (v.is_number_unsigned()) return static_cast<long double>(v.get<uint64_t>());
  if (v.is_number_integer()) return static_cast<long double>(v.get<int64_t>());
  if (v.is_number_float()) {
    double d = v.get<double>();
    if (std::isfinite(d) && d == std::floor(d)) return static_cast<long double>(d);
  }
  return std::nullopt;
}

}  // namespace

std::string DescribeJsonValue(const nlohmann::json& v) {
  switch (v.type()) {
    case nlohmann::json::value_t::null:
      return "null";
    case nlohmann::json::value_t::boolean:
      return StrCat("boolean `", v.get<bool>() ? "true" : "false", "`");
    case nlohmann::json::value_t::string:
      return "string";
    case nlohmann::json::value_t::number_integer:
    case nlohmann::json::value_t::number_unsigned:
      return StrCat("integer `", FormatNumber(v), "`");
    case nlohmann::json::value_t::number_float:
      return StrCat("floating point `", FormatNumber(v), "`");
    case nlohmann::json::value_t::array:
      return "sequence";
    case nlohmann::json::value_t::object:
      return "map";
    default:
      return "value";
  }
}

JsonFields::JsonFields(const nlohmann::json& obj, std::string path)
    : obj_(obj), path_(std::move(path)) {
  if (!obj_.is_object()) WrongType(path_, obj_, "a map");
}

const nlohmann::json* JsonFields::Get(std::string_view key) const {
  auto it = obj_.find(key);
  if (it == obj_.end() || it->is_null()) return nullptr;
  return &*it;
}

std::string JsonFields::PathOf(std::string_view key) const {
  return path_.empty() ? std::string(key) : StrCat(path_, ".", std::string(key));
}

std::optional<bool> JsonFields::Bool(std::string_view key) const {
  const nlohmann::json* v = Get(key);
  if (v == nullptr) return std::nullopt;
  if (!v->is_boolean()) WrongType(PathOf(key), *v, "a boolean");
  return v->get<bool>();
}

std::optional<int64_t> JsonFields::Int(std::string_view key, int64_t min, int64_t max,
                                       const char* type) const {
  const nlohmann::json* v = Get(key);
  if (v == nullptr) return std::nullopt;
  if (!v->is_number()) WrongType(PathOf(key), *v, type);
  std::optional<long double> value = IntegralValue(*v);
  if (!value) WrongType(PathOf(key), *v, type);
  if (*value < static_cast<long double>(min) || *value > static_cast<long double>(max)) {
    OutOfRange(PathOf(key), *v, type);
  }
  return static_cast<int64_t>(*value);
}

std::optional<int32_t> JsonFields::I32(std::string_view key) const {
  auto v =
      Int(key, std::numeric_limits<int32_t>::min(), std::numeric_limits<int32_t>::max(), "i32");
  if (!v) return std::nullopt;
  return static_cast<int32_t>(*v);
}

std::optional<int32_t> JsonFields::U32(std::string_view key) const {
  auto v = Int(key, 0, std::numeric_limits<uint32_t>::max(), "u32");
  if (!v) return std::nullopt;
  // Past INT32_MAX every limit of ours is exceeded anyway; saturate to keep one type.
  return static_cast<int32_t>(std::min<int64_t>(*v, std::numeric_limits<int32_t>::max()));
}

std::optional<uint64_t> JsonFields::Seed(std::string_view key, bool allow_negative) const {
  const nlohmann::json* v = Get(key);
  if (v == nullptr) return std::nullopt;
  const char* type = allow_negative ? "i64" : "u64";
  if (v->is_number_unsigned()) return v->get<uint64_t>();
  if (v->is_number_integer()) {
    int64_t s = v->get<int64_t>();
    if (s < 0 && !allow_negative) OutOfRange(PathOf(key), *v, type);
    return static_cast<uint64_t>(s);
  }
  if (v->is_number_float()) {
    std::optional<long double> value = IntegralValue(*v);
    if (!value) WrongType(PathOf(key), *v, type);
    const long double lo = allow_negative ? -9223372036854775808.0L : 0.0L;
    if (*value < lo || *value > 18446744073709551615.0L) OutOfRange(PathOf(key), *v, type);
    if (*value < 0) return static_cast<uint64_t>(static_cast<int64_t>(*value));
    return static_cast<uint64_t>(*value);
  }
  WrongType(PathOf(key), *v, type);
}

std::optional<float> JsonFields::F32(std::string_view key) const {
  const nlohmann::json* v = Get(key);
  if (v == nullptr) return std::nullopt;
  if (!v->is_number()) WrongType(PathOf(key), *v, "f32");
  double d = v->get<double>();
  if (!std::isfinite(d) || std::fabs(d) > std::numeric_limits<float>::max()) {
    OutOfRange(PathOf(key), *v, "f32");
  }
  return static_cast<float>(d);
}

std::optional<std::string> JsonFields::String(std::string_view key) const {
  const nlohmann::json* v = Get(key);
  if (v == nullptr) return std::nullopt;
  if (!v->is_string()) WrongType(PathOf(key), *v, "a string");
  return v->get<std::string>();
}

std::optional<std::vector<std::string>> JsonFields::StringList(std::string_view key,
                                                               bool allow_single) const {
  const nlohmann::json* v = Get(key);
  if (v == nullptr) return std::nullopt;
  if (allow_single && v->is_string()) return std::vector<std::string>{v->get<std::string>()};
  if (!v->is_array()) {
    WrongType(PathOf(key), *v,
              allow_single ? "a string or a sequence of strings" : "a sequence of strings");
  }
  std::vector<std::string> out;
  out.reserve(v->size());
  for (size_t i = 0; i < v->size(); ++i) {
    const nlohmann::json& item = (*v)[i];
    if (!item.is_string()) WrongType(StrCat(PathOf(key), "[", i, "]"), item, "a string");
    out.push_back(item.get<std::string>());
  }
  return out;
}

std::optional<std::vector<int32_t>> JsonFields::IntList(std::string_view key, int64_t min,
                                                        int64_t max) const {
  const nlohmann::json* v = Get(key);
  if (v == nullptr) return std::nullopt;
  return ReadIntList(*v, PathOf(key), min, max);
}

std::vector<int32_t> ReadIntList(const nlohmann::json& v, const std::string& path, int64_t min,
                                 int64_t max) {
  if (!v.is_array()) WrongType(path, v, "a sequence of integers");
  std::vector<int32_t> out;
  out.reserve(v.size());
  for (size_t i = 0; i < v.size(); ++i) {
    const nlohmann::json& item = v[i];
    std::optional<long double> value = IntegralValue(item);
    std::string item_path = StrCat(path, "[", i, "]");
    if (!item.is_number() || !value) WrongType(item_path, item, "an integer");
    if (*value < min || *value > max) OutOfRange(item_path, item, "a token id");
    out.push_back(static_cast<int32_t>(*value));
  }
  return out;
}

}  // namespace kiln::api
