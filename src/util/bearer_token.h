// `Authorization: Bearer <key>` checks, shared by `kiln serve` and the `kiln launch` router.
#pragma once

#include <string>

namespace kiln {

// Equal-time comparison of a presented secret with the expected one.
bool ConstantTimeEquals(const std::string& a, const std::string& b);

// True when `authorization` (the header's value, or nullptr when absent) is "Bearer <key>"
// (scheme case-insensitive) with `key`.
bool BearerTokenMatches(const std::string* authorization, const std::string& key);

}  // namespace kiln
