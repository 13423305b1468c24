#include "util/bearer_token.h"

#include <algorithm>
#include <cctype>

namespace kiln {

bool ConstantTimeEquals(const std::string& a, const std::string& b) {
  const size_t n = std::max(a.size(), b.size());
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  for (size_t i = 0; i < n; ++i) {
    const unsigned char x = i < a.size() ? static_cast<unsigned char>(a[i]) : 0;
    const unsigned char y = i < b.size() ? static_cast<unsigned char>(b[i]) : 0;
    diff |= static_cast<unsigned char>(x ^ y);
  }
  return diff == 0;
}

bool BearerTokenMatches(const std::string* authorization, const std::string& key) {
  if (authorization == nullptr || authorization->size() < 7) return false;
  std::string scheme = authorization->substr(0, 7);
  for (char& c : scheme) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (scheme != "bearer ") return false;
  std::string token = authorization->substr(7);
  while (!token.empty() && token.front() == ' ') token.erase(0, 1);
  return ConstantTimeEquals(token, key);
}

}  // namespace kiln
