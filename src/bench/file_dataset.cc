// Prompts read from a file (JSON Lines, a JSON array, or one prompt per line).
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "bench/dataset.h"
#include "util/error.h"

namespace kiln::bench {
namespace {

using nlohmann::json;

const json* FirstField(const json& row, std::initializer_list<const char*> names) {
  for (const char* name : names) {
    auto it = row.find(name);
    if (it != row.end() && !it->is_null()) return &*it;
  }
  return nullptr;
}

DataItem ItemFromRow(const json& row, const std::string& where) {
  DataItem item;
  if (row.is_string()) {
    item.prompt = row.get<std::string>();
    return item;
  }
  KILN_CHECK(row.is_object(), where, ": expected a JSON object or string");
  if (const json* messages = FirstField(row, {"messages"})) {
    KILN_CHECK(messages->is_array() && !messages->empty(), where, ": 'messages' must be a list");
    item.messages_json = messages->dump();
    for (const json& m : *messages) {  // the text for /v1/completions: the contents joined
      if (m.contains("content") && m["content"].is_string()) {
        if (!item.prompt.empty()) item.prompt += "\n";
        item.prompt += m["content"].get<std::string>();
      }
    }
  } else {
    const json* text = FirstField(row, {"prompt", "text", "content", "input", "question"});
    KILN_CHECK(text && text->is_string(), where,
               ": no prompt (fields prompt, text, content, input, question or messages)");
    item.prompt = text->get<std::string>();
  }
  if (const json* out = FirstField(row, {"output_tokens", "output_tokens_count", "max_tokens",
                                         "max_new_tokens", "completion_tokens"})) {
    KILN_CHECK(out->is_number_integer() && out->get<int64_t>() > 0, where,
               ": the output token count must be a positive integer");
    item.output_tokens = out->get<int64_t>();
  }
  if (const json* in = FirstField(row, {"prompt_tokens", "prompt_tokens_count"})) {
    if (in->is_number_integer()) item.prompt_tokens = in->get<int64_t>();
  }
  return item;
}

std::vector<DataItem> ReadItems(const std::string& path) {
  std::ifstream in(path);
  KILN_CHECK(in.good(), path, ": cannot open the --data file");
  std::stringstream buffer;
  buffer << in.rdbuf();
  const std::string text = buffer.str();
  std::vector<DataItem> items;
  const bool plain = path.size() >= 4 && path.compare(path.size() - 4, 4, ".txt") == 0;
  const size_t first = text.find_first_not_of(" \t\r\n");
  if (!plain && first != std::string::npos && text[first] == '[') {
    json rows = json::parse(text, nullptr, false);
    KILN_CHECK(rows.is_array(), path, ": not valid JSON");
    for (size_t i = 0; i < rows.size(); ++i) {
      items.push_back(ItemFromRow(rows[i], StrCat(path, ": item ", i)));
    }
    return items;
  }
  std::istringstream lines(text);
  std::string line;
  for (int64_t n = 1; std::getline(lines, line); ++n) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    if (plain) {
      items.push_back(ItemFromRow(json(line), ""));
      continue;
    }
    json row = json::parse(line, nullptr, false);
    KILN_CHECK(!row.is_discarded(), path, ":", n, ": not valid JSON");
    items.push_back(ItemFromRow(row, StrCat(path, ":", n)));
  }
  return items;
}

class FileDataset : public Dataset {
 public:
  FileDataset(const std::string& path, std::vector<DataItem> items)
      : path_(path), items_(std::move(items)) {}

  const DataItem& Get(int64_t index) override {
    return items_[static_cast<size_t>(index) % items_.size()];
  }
  void Prepare(int64_t) override {}
  std::string description() const override {
    return StrCat("file: ", path_, " (", items_.size(), " prompts)");
  }

 private:
  std::string path_;
  std::vector<DataItem> items_;
};

}  // namespace

std::unique_ptr<Dataset> LoadFileDataset(const std::string& path,
                                         const PromptTokenizer* tokenizer) {
  std::vector<DataItem> items = ReadItems(path);
  KILN_CHECK(!items.empty(), path, ": no prompts in the --data file");
  if (tokenizer != nullptr) {
    for (DataItem& item : items) {
      if (item.prompt_tokens < 0) item.prompt_tokens = tokenizer->CountPromptTokens(item.prompt);
    }
  }
  return std::make_unique<FileDataset>(path, std::move(items));
}

}  // namespace kiln::bench
