// Errors a request can end with, carrying the HTTP status and TGI's `error_type`, and their two
// wire shapes: TGI's {"error","error_type"} and OpenAI's
// {"error":{"message","type","param","code"}}. Messages and statuses follow TGI
// (router/src/server.rs, router/src/validation.rs) because clients (text_generation,
// huggingface_hub) parse them.
#pragma once

#include <exception>
#include <string>
#include <string_view>

namespace kiln::api {

class ApiError : public std::exception {
 public:
  // `param`: the request field at fault, when one is (OpenAI's error.param); may be empty.
  ApiError(int status, std::string type, std::string message, std::string param = "");

  int status() const { return status_; }
  const std::string& type() const { return type_; }  // TGI error_type: "validation", ...
  const std::string& message() const { return message_; }
  const std::string& param() const { return param_; }
  const char* what() const noexcept override { return message_.c_str(); }

 private:
  int status_;
  std::string type_;
  std::string message_;
  std::string param_;
};

// 422 "Input validation error: <detail>" (TGI ValidationError).
ApiError ValidationError(std::string_view detail, std::string param = "");
// 400: the body is not JSON (bad syntax, bad UTF-8, too deep, number out of range).
ApiError BadJsonError(std::string_view detail);
// 422: valid JSON of the wrong shape, e.g. a string where a number belongs. `path` names the
// field as "parameters.temperature".
ApiError WrongTypeError(std::string_view path, std::string_view detail);
// 429 "Model is overloaded".
ApiError OverloadedError();
// 424 "Request failed during generation: <detail>".
ApiError GenerationError(std::string_view detail);
// 500 "Incomplete generation".
ApiError IncompleteGenerationError();
// 503 while the server drains before exit.
ApiError ShuttingDownError();

// {"error": message, "error_type": type}
std::string TgiErrorJson(const ApiError& e);
// {"error": {"message", "type", "param", "code"}}; code is TGI's error_type, param may be null.
std::string OpenAiErrorJson(const ApiError& e);

}  // namespace kiln::api
