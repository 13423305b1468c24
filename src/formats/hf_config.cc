#include "formats/hf_config.h"

#include <filesystem>

#include "util/error.h"
#include "util/read_file.h"

namespace kiln {
namespace {

nlohmann::json ParseJsonObject(std::string_view text, const std::string& path) {
  nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  KILN_CHECK(!j.is_discarded(), path, ": invalid JSON");
  KILN_CHECK(j.is_object(), path, ": expected a JSON object at the top level");
  return j;
}

nlohmann::json ReadJsonObject(const std::string& path) {
  return ParseJsonObject(ReadFileText(path), path);
}

std::string ConfigPath(const HfConfig& c) { return c.dir + "/config.json"; }

}  // namespace

HfConfig LoadHfConfig(const std::string& dir) {
  HfConfig c;
  c.dir = dir;
  c.config = ReadJsonObject(dir + "/config.json");
  std::string gen = dir + "/generation_config.json";
  c.generation_config =
      std::filesystem::exists(gen) ? ReadJsonObject(gen) : nlohmann::json::object();
  return c;
}

HfConfig ParseHfConfig(std::string_view config_json, std::string_view generation_json,
                       const std::string& dir) {
  HfConfig c;
  c.dir = dir;
  c.config = ParseJsonObject(config_json, dir + "/config.json");
  c.generation_config = generation_json.empty()
                            ? nlohmann::json::object()
                            : ParseJsonObject(generation_json, dir + "/generation_config.json");
  return c;
}

std::optional<int64_t> HfConfig::GetInt(const std::string& key) const {
  auto it = config.find(key);
  if (it == config.end() || it->is_null()) return std::nullopt;
  KILN_CHECK(it->is_number_integer(), ConfigPath(*this), ": '", key, "' must be an integer");
  return it->get<int64_t>();
}

std::optional<double> HfConfig::GetFloat(const std::string& key) const {
  auto it = config.find(key);
  if (it == config.end() || it->is_null()) return std::nullopt;
  KILN_CHECK(it->is_number(), ConfigPath(*this), ": '", key, "' must be a number");
  return it->get<double>();
}

std::optional<bool> HfConfig::GetBool(const std::string& key) const {
  auto it = config.find(key);
  if (it == config.end() || it->is_null()) return std::nullopt;
  KILN_CHECK(it->is_boolean(), ConfigPath(*this), ": '", key, "' must be true or false");
  return it->get<bool>();
}

std::optional<std::string> HfConfig::GetString(const std::string& key) const {
  auto it = config.find(key);
  if (it == config.end() || it->is_null()) return std::nullopt;
  KILN_CHECK(it->is_string(), ConfigPath(*this), ": '", key, "' must be a string");
  return it->get<std::string>();
}

std::vector<int64_t> HfConfig::GetIntList(const std::string& key) const {
  for (const nlohmann::json* j : {&generation_config, &config}) {
    auto it = j->find(key);
    if (it == j->end() || it->is_null()) continue;
    std::vector<int64_t> out;
    if (it->is_number_integer()) {
      out.push_back(it->get<int64_t>());
    } else {
      KILN_CHECK(it->is_array(), dir, ": '", key, "' must be an integer or a list of integers");
      for (const auto& v : *it) {
        KILN_CHECK(v.is_number_integer(), dir, ": '", key, "' must hold integers");
        out.push_back(v.get<int64_t>());
      }
    }
    return out;
  }
  return {};
}

}  // namespace kiln
