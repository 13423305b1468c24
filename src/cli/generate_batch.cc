#include "cli/generate_batch.h"

#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <string_view>
#include <utility>

#include "tokenizer/tokenizer.h"
#include "util/error.h"

namespace kiln {
namespace {

const std::set<std::string_view>& KnownKeys() {
  static const std::set<std::string_view> keys = {"prompt",
                                                  "prompt_ids",
                                                  "arrival_step",
                                                  "max_new_tokens",
                                                  "do_sample",
                                                  "temperature",
                                                  "top_k",
                                                  "top_p",
                                                  "typical_p",
                                                  "min_p",
                                                  "repetition_penalty",
                                                  "frequency_penalty",
                                                  "presence_penalty",
                                                  "seed",
                                                  "stop",
                                                  "ignore_eos",
                                                  "min_new_tokens",
                                                  "top_n_tokens",
                                                  "details"};
  return keys;
}

std::vector<int32_t> LinePrompt(const nlohmann::json& line, const Tokenizer* tokenizer) {
  if (line.contains("prompt_ids")) {
    const nlohmann::json& ids = line["prompt_ids"];
    KILN_CHECK(ids.is_array() && !ids.empty(), "`prompt_ids` must be a non-empty array");
    std::vector<int32_t> out;
    for (const nlohmann::json& id : ids) {
      KILN_CHECK(id.is_number_integer(), "`prompt_ids` must hold token ids");
      out.push_back(id.get<int32_t>());
    }
    return out;
  }
  KILN_CHECK(line.contains("prompt") && line["prompt"].is_string(),
             "needs a string `prompt` or `prompt_ids`");
  KILN_CHECK(tokenizer != nullptr, "no tokenizer for this model format; use `prompt_ids`");
  std::vector<int32_t> ids = tokenizer->Encode(line["prompt"].get<std::string>(), true);
  KILN_CHECK(!ids.empty(), "the prompt is empty after tokenization");
  return ids;
}

BatchEntry ParseLine(const std::string& text, const GenerateParams& defaults,
                     const Tokenizer* tokenizer, const std::vector<int64_t>& eos_ids) {
  nlohmann::json line;
  try {
    line = nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    throw Error(std::string("not JSON: ") + e.what());
  }
  KILN_CHECK(line.is_object(), "each line must be a JSON object");
  for (const auto& [key, value] : line.items()) {
    KILN_CHECK(KnownKeys().count(key) > 0, "unknown field `", key, "`");
  }
  GenerateParams p = defaults;
  ApplyJsonParams(line, p);
  if (line.contains("details")) p.details = line["details"].get<bool>();
  BatchEntry entry;
  entry.details = p.details;
  entry.pending.request = MakeRequest(p, LinePrompt(line, tokenizer), eos_ids);
  if (line.contains("arrival_step")) {
    KILN_CHECK(line["arrival_step"].is_number_integer() && line["arrival_step"].get<int64_t>() >= 0,
               "`arrival_step` must be an integer >= 0");
    entry.pending.arrival_step = line["arrival_step"].get<int64_t>();
  }
  return entry;
}

}  // namespace

std::vector<BatchEntry> ReadBatchFile(const std::string& path, const GenerateParams& defaults,
                                      const Tokenizer* tokenizer,
                                      const std::vector<int64_t>& eos_ids) {
  std::ifstream in(path);
  KILN_CHECK(in.good(), "--batch: cannot open ", path);
  std::vector<BatchEntry> entries;
  std::string text;
  for (int line_no = 1; std::getline(in, text); ++line_no) {
    if (text.find_first_not_of(" \t\r") == std::string::npos) continue;  // blank line
    try {
      entries.push_back(ParseLine(text, defaults, tokenizer, eos_ids));
    } catch (const Error& e) {
      throw Error(path + ":" + std::to_string(line_no) + ": " + e.what());
    }
  }
  KILN_CHECK(!entries.empty(), "--batch: ", path, " holds no request");
  return entries;
}

}  // namespace kiln
