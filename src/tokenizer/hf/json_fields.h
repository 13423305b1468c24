// Typed, checked access to tokenizer.json fields: every failure is a kiln::Error naming where in
// the file it is ("model.tokenizer.json: normalizer.normalizers[1].content: expected a string").
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

namespace kiln::hf {

using Json = nlohmann::json;

// Deepest nesting of arrays and objects accepted in tokenizer.json / tokenizer_config.json:
// real files nest a few dozen levels at most, and copying or printing a JSON value recurses
// once per level, so a deeper (hostile) document could overflow the stack.
inline constexpr int kMaxJsonDepth = 128;

// Parses `text`; invalid JSON or nesting deeper than kMaxJsonDepth throws
// kiln::Error("<source>: not valid JSON: ...").
Json ParseJson(std::string_view text, const std::string& source);

// `where` names the object being read; the helpers append ".key".
std::string FieldPath(std::string_view where, std::string_view key);

void CheckObject(const Json& j, std::string_view where);
// nullptr when the key is absent or null.
const Json* OptField(const Json& obj, std::string_view key);
const Json& Field(const Json& obj, std::string_view key, std::string_view where);

std::string GetString(const Json& obj, std::string_view key, std::string_view where);
std::optional<std::string> OptString(const Json& obj, std::string_view key, std::string_view where);
bool OptBool(const Json& obj, std::string_view key, std::string_view where, bool def);
int64_t GetInt(const Json& obj, std::string_view key, std::string_view where, int64_t min,
               int64_t max);
int64_t OptInt(const Json& obj, std::string_view key, std::string_view where, int64_t min,
               int64_t max, int64_t def);
// Integer value check of an element (not a field).
int64_t AsInt(const Json& j, std::string_view where, int64_t min, int64_t max);
const std::string& AsString(const Json& j, std::string_view where);
// Exactly one Unicode character (Metaspace replacement, Strip content).
uint32_t GetChar(const Json& obj, std::string_view key, std::string_view where);
// The "type" of a component object.
std::string TypeOf(const Json& obj, std::string_view where);

}  // namespace kiln::hf
