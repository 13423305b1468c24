// Template source -> syntax tree, following Jinja2's grammar (jinja2/parser.py) for the
// statements and expressions chat templates use.
#pragma once

#include <string_view>

#include "tokenizer/jinja/ast.h"
#include "tokenizer/jinja/lexer.h"

namespace kiln::jinja {

// Throws TemplateError with the line of the offending token.
Template Parse(std::string_view source, const LexerOptions& options = {});

}  // namespace kiln::jinja
