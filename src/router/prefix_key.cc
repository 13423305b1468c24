#include "router/prefix_key.h"

#include <nlohmann/json.hpp>
#include <string>

#include "util/json_depth.h"

namespace kiln {
namespace {

constexpr int kMaxDepth = 64;

uint64_t Fnv1a(std::string_view bytes) {
  uint64_t h = 0xCBF29CE484222325ULL;
  for (unsigned char c : bytes) {
    h ^= c;
    h *= 0x100000001B3ULL;
  }
  return h;
}

std::string Text(const nlohmann::json& value) {
  return value.is_string() ? value.get<std::string>() : value.dump();
}

// "role\x1fcontent\x1e" per message, until `chars` bytes are there.
std::string ChatPrefix(const nlohmann::json& messages, size_t chars) {
  std::string out;
  for (const nlohmann::json& m : messages) {
    if (out.size() >= chars) break;
    if (!m.is_object()) continue;
    if (auto role = m.find("role"); role != m.end()) out += Text(*role);
    out += '\x1f';
    if (auto content = m.find("content"); content != m.end()) out += Text(*content);
    out += '\x1e';
  }
  return out;
}

}  // namespace

std::optional<uint64_t> PromptPrefixKey(std::string_view body, size_t chars) {
  // nlohmann's parser recurses: "[[[[..." as deep as a 2 MB body allows would overflow the
  // stack. A body that deep is refused by the replica anyway.
  if (JsonNestingDepth(body, kMaxDepth) > kMaxDepth) return std::nullopt;
  const nlohmann::json doc = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (!doc.is_object()) return std::nullopt;
  std::string prompt;
  if (auto it = doc.find("inputs"); it != doc.end()) {
    prompt = Text(*it);
  } else if (auto p = doc.find("prompt"); p != doc.end()) {
    prompt = p->is_array() && !p->empty() ? Text(p->front()) : Text(*p);
  } else if (auto m = doc.find("messages"); m != doc.end() && m->is_array()) {
    prompt = ChatPrefix(*m, chars);
  } else {
    return std::nullopt;
  }
  if (prompt.size() > chars) prompt.resize(chars);
  return Fnv1a(prompt);
}

}  // namespace kiln
