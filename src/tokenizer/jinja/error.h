// Errors of the chat-template engine: syntax errors found by Parse and runtime errors (including
// the template's own raise_exception) found by Render, each with the template line it points at.
#pragma once

#include <string>

#include "util/error.h"

namespace kiln::jinja {

class TemplateError : public Error {
 public:
  // line 0 = not known yet; the evaluator fills it in before the error leaves Render.
  explicit TemplateError(std::string message, int line = 0, bool raised = false)
      : Error(Format(message, line, raised)),
        message_(std::move(message)),
        line_(line),
        raised_(raised) {}

  const std::string& message() const { return message_; }  // without the location prefix
  int line() const { return line_; }
  // True when the template itself called raise_exception(message), e.g. to reject roles that do
  // not alternate: the message is meant for the API caller.
  bool raised() const { return raised_; }

 private:
  static std::string Format(const std::string& message, int line, bool raised) {
    std::string out = "chat template";
    if (line > 0) out += " line " + std::to_string(line);
    out += raised ? ": raise_exception: " : ": ";
    return out + message;
  }

  std::string message_;
  int line_;
  bool raised_;
};

// Throws a runtime TemplateError; the evaluator attaches the current line.
[[noreturn]] inline void Fail(std::string message) { throw TemplateError(std::move(message)); }

}  // namespace kiln::jinja
