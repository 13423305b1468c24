// Hugging Face model directory metadata: config.json and (optional) generation_config.json.
// Only parsing and type checks live here; the meaning of each field is the model layer's.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kiln {

struct HfConfig {
  std::string dir;
  nlohmann::json config;             // config.json, an object
  nlohmann::json generation_config;  // generation_config.json, or an empty object

  // Typed field access with errors naming config.json and the key. Missing -> nullopt.
  std::optional<int64_t> GetInt(const std::string& key) const;
  std::optional<double> GetFloat(const std::string& key) const;
  std::optional<bool> GetBool(const std::string& key) const;
  std::optional<std::string> GetString(const std::string& key) const;
  // An int or a list of ints (eos_token_id); looked up in config then generation_config.
  std::vector<int64_t> GetIntList(const std::string& key) const;
};

// Reads dir/config.json (required) and dir/generation_config.json (optional).
HfConfig LoadHfConfig(const std::string& dir);
// The same from the two files' text (empty `generation_json`: none); `dir` names them in errors.
HfConfig ParseHfConfig(std::string_view config_json, std::string_view generation_json,
                       const std::string& dir);

}  // namespace kiln
