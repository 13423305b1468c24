#include "tokenizer/load_tokenizer.h"

#include <filesystem>

#include "formats/gguf.h"
#include "util/error.h"
#include "util/read_file.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;

std::unique_ptr<Tokenizer> FromJsonFile(const fs::path& json_path) {
  const fs::path config = json_path.parent_path() / "tokenizer_config.json";
  std::error_code ec;
  const std::string config_text = fs::is_regular_file(config, ec) ? ReadFileText(config.string()) : "";
  return Tokenizer::FromHfJson(ReadFileText(json_path.string()), config_text, json_path.string());
}

}  // namespace

std::unique_ptr<Tokenizer> LoadTokenizer(const std::string& path) {
  std::error_code ec;
  const fs::path p(path);
  if (fs::is_directory(p, ec)) {
    const fs::path json = p / "tokenizer.json";
    KILN_CHECK(fs::is_regular_file(json, ec), path,
               ": no tokenizer.json in the model directory (slow-only tokenizers such as a bare "
               "tokenizer.model are not supported; convert with transformers first)");
    return FromJsonFile(json);
  }
  KILN_CHECK(fs::is_regular_file(p, ec), path, ": no such file or directory");
  if (p.extension() == ".json") return FromJsonFile(p);
  GgufFile gguf(path);
  return Tokenizer::FromGguf(gguf);
}

bool HasHfTokenizer(const std::string& path) {
  std::error_code ec;
  return fs::is_directory(path, ec) && fs::is_regular_file(fs::path(path) / "tokenizer.json", ec);
}

}  // namespace kiln
