// Template source -> tokens, with Jinja's whitespace control: {%- -%} strip, {%+ keeps, and the
// trim_blocks / lstrip_blocks settings transformers renders chat templates with.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace kiln::jinja {

enum class Tok {
  kData,        // literal text
  kVarBegin,    // {{
  kVarEnd,      // }}
  kBlockBegin,  // {%
  kBlockEnd,    // %}
  kName,
  kString,  // text holds the decoded value
  kInt,
  kFloat,
  kOp,  // text holds the operator
  kEof,
};

struct Token {
  Tok type = Tok::kEof;
  std::string text;
  int line = 1;
  int64_t int_value = 0;
  double float_value = 0;
};

struct LexerOptions {
  bool trim_blocks = true;    // drop the first newline after a block or comment tag
  bool lstrip_blocks = true;  // drop spaces and tabs before a block or comment tag on its line
};

// Throws TemplateError (with the line) on malformed input: unclosed tags, strings or comments.
std::vector<Token> Tokenize(std::string_view source, const LexerOptions& options = {});

}  // namespace kiln::jinja
