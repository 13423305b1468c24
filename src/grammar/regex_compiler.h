// Regular expressions (the subset structured-output users write: Python `re` / JSON-schema
// `pattern` syntax without backreferences or lookaround) -> ByteNfa. The whole output must
// match (re.fullmatch): `^` at the start and `$` at the end are accepted and change nothing.
//
// Supported: literals, `.` (any character but \n), classes `[a-z_]`, `[^...]`, `\d \w \s`
// and their negations (also inside classes), escapes `\n \t \r \f \v \0 \xHH \uHHHH`, escaped
// punctuation, groups `(...)`, `(?:...)`, `(?P<name>...)`, `(?<name>...)`, alternation, and
// `* + ? {n} {n,} {n,m}` (a lazy `?` after them is accepted: the language is the same).
// Refused with a message naming the construct (kiln::Error): backreferences, lookaround,
// inline flags, `\b`, `\p{...}`, anchors inside the pattern, repetition counts over 10000,
// nesting deeper than 200, invalid UTF-8.
#pragma once

#include <string_view>

#include "grammar/byte_nfa.h"

namespace kiln::grammar {

// Builds into `nfa` and returns the pattern's fragment (its start and end states).
Fragment CompileRegex(std::string_view pattern, ByteNfa& nfa);

}  // namespace kiln::grammar
