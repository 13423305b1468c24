#include "bench/data_spec.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>

#include "util/error.h"

namespace kiln::bench {
namespace {

double ParseNumber(const std::string& key, const std::string& value) {
  size_t used = 0;
  double v = 0;
  try {
    v = std::stod(value, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  KILN_CHECK(used == value.size() && !value.empty() && std::isfinite(v) && v >= 0, "--data: ", key,
             "='", value, "' is not a non-negative number");
  return v;
}

int64_t AsCount(const std::string& key, double v) {
  KILN_CHECK(v == std::floor(v) && v < 1e9, "--data: ", key, " must be a whole number");
  return static_cast<int64_t>(v);
}

void Assign(SyntheticDataSpec& spec, const std::string& key, double v) {
  static const std::map<std::string, std::string> kAliases = {
      {"prompt_tokens_variance", "prompt_tokens_stdev"},
      {"generated_tokens", "output_tokens"},
      {"generated_tokens_variance", "output_tokens_stdev"},
      {"generated_tokens_min", "output_tokens_min"},
      {"generated_tokens_max", "output_tokens_max"},
  };
  auto alias = kAliases.find(key);
  const std::string& k = alias == kAliases.end() ? key : alias->second;
  const bool is_prompt = k.rfind("prompt_tokens", 0) == 0;
  const bool is_output = k.rfind("output_tokens", 0) == 0;
  if (is_prompt || is_output) {
    TokenCountSpec& t = is_prompt ? spec.prompt : spec.output;
    const std::string suffix = k.substr(13);  // both prefixes are 13 characters
    if (suffix.empty()) return void(t.mean = AsCount(key, v));
    if (suffix == "_stdev") return void(t.stdev = v);
    if (suffix == "_min") return void(t.min = AsCount(key, v));
    if (suffix == "_max") return void(t.max = AsCount(key, v));
  }
  if (k == "samples") return void(spec.samples = AsCount(key, v));
  throw Error(StrCat("--data: unknown key '", key,
                     "' (known: prompt_tokens, output_tokens and their _stdev/_min/_max, "
                     "samples; GuideLLM's generated_tokens* and *_variance)"));
}

void Validate(const SyntheticDataSpec& spec) {
  KILN_CHECK(spec.prompt.mean > 0, "--data: prompt_tokens is required and must be > 0");
  for (const TokenCountSpec* t : {&spec.prompt, &spec.output}) {
    KILN_CHECK(t->min < 0 || t->max < 0 || t->min <= t->max, "--data: a _min is above its _max");
  }
}

}  // namespace

SyntheticDataSpec ParseSyntheticSpec(const std::string& text) {
  SyntheticDataSpec spec;
  if (!text.empty() && text.front() == '{') {
    nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
    KILN_CHECK(j.is_object(), "--data: not a valid JSON object: ", text);
    for (const auto& [key, value] : j.items()) {
      KILN_CHECK(value.is_number(), "--data: ", key, " must be a number");
      KILN_CHECK(value.get<double>() >= 0, "--data: ", key, " must not be negative");
      Assign(spec, key, value.get<double>());
    }
  } else {
    size_t start = 0;
    while (start < text.size()) {
      size_t comma = text.find(',', start);
      if (comma == std::string::npos) comma = text.size();
      const std::string item = text.substr(start, comma - start);
      const size_t eq = item.find('=');
      KILN_CHECK(eq != std::string::npos, "--data: '", item, "' is not key=value");
      const std::string key = item.substr(0, eq);
      Assign(spec, key, ParseNumber(key, item.substr(eq + 1)));
      start = comma + 1;
    }
  }
  Validate(spec);
  return spec;
}

DataArg ParseDataArg(const std::string& text) {
  DataArg arg;
  auto ends_with = [&](const char* suffix) {
    const std::string s = suffix;
    return text.size() >= s.size() && text.compare(text.size() - s.size(), s.size(), s) == 0;
  };
  std::error_code ec;
  if (std::filesystem::is_regular_file(text, ec) || ends_with(".jsonl") || ends_with(".json") ||
      ends_with(".txt")) {
    arg.is_file = true;
    arg.path = text;
    return arg;
  }
  arg.synthetic = ParseSyntheticSpec(text);
  return arg;
}

int64_t SampleTokenCount(const TokenCountSpec& spec, std::mt19937_64& rng) {
  const double stdev = spec.stdev;
  const int64_t lo =
      spec.min >= 0
          ? spec.min
          : std::max<int64_t>(1, stdev > 0 ? std::llround(spec.mean - 5 * stdev) : spec.mean);
  const int64_t hi =
      spec.max >= 0 ? spec.max : (stdev > 0 ? std::llround(spec.mean + 5 * stdev) : spec.mean);
  if (lo >= hi) return lo;
  if (stdev <= 0) return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
  const double draw = std::normal_distribution<double>(static_cast<double>(spec.mean), stdev)(rng);
  return std::llround(std::clamp(draw, static_cast<double>(lo), static_cast<double>(hi)));
}

std::string Describe(const TokenCountSpec& spec) {
  if (spec.mean <= 0 && spec.min < 0) return "server default";
  std::string out = std::to_string(spec.mean);
  std::string extra;
  if (spec.stdev > 0) extra += StrCat("stdev ", std::to_string(spec.stdev).substr(0, 6));
  if (spec.min >= 0 || spec.max >= 0) {
    if (!extra.empty()) extra += ", ";
    extra += StrCat(spec.min >= 0 ? std::to_string(spec.min) : "", "..",
                    spec.max >= 0 ? std::to_string(spec.max) : "");
  }
  return extra.empty() ? out : out + " (" + extra + ")";
}

}  // namespace kiln::bench
