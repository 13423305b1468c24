// JSON schema (the draft 2020-12 subset structured output needs) -> a regex (regex_compiler.h
// syntax) that matches exactly the compact JSON texts the constraint allows: no whitespace but
// one optional space after `:` and `,`; object properties in the schema's order.
//
// Supported: `type` (one or a list), `properties` / `required` / `additionalProperties`
// (false or absent: only the listed properties; true or a schema: more after them), `enum`,
// `const`, `items` / `prefixItems` / `minItems` / `maxItems`, `minLength` / `maxLength` /
// `pattern` / `format` (date, time, date-time, uuid, email, ipv4; others are annotations),
// integer `minimum` / `maximum` / exclusive forms, `anyOf` / `oneOf`, a one-element `allOf`,
// local `$ref` ("#", "#/$defs/...", "#/definitions/..."), unrolled `max_ref_depth` times
// when recursive. A schema without keywords (`{}`, `true`) is any JSON value, nested up to
// `generic_depth`. Annotations (title, description, examples, default, ...) are ignored.
// Refused with kiln::Error naming the keyword and its JSON pointer: `not`, `if`,
// `patternProperties`, `multipleOf`, bounds on non-integer numbers, remote refs, and other
// unsupported keywords.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace kiln::grammar {

struct JsonSchemaOptions {
  int max_ref_depth = 3;
  int generic_depth = 2;
};

std::string JsonSchemaToRegex(const nlohmann::ordered_json& schema,
                              const JsonSchemaOptions& options = {});

// `text` with every regex metacharacter escaped.
std::string RegexLiteral(std::string_view text);

}  // namespace kiln::grammar
