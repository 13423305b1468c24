// Nesting depth of JSON text, measured before parsing: recursive parsers (and copies of what
// they build) would overflow the stack on input like "[[[[...", so callers refuse deep input
// with a clear error first.
#pragma once

#include <string_view>

namespace kiln {

// Deepest nesting of [ and { outside strings; stops counting once past `limit`.
int JsonNestingDepth(std::string_view text, int limit);

}  // namespace kiln
