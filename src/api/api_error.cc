#include "api/api_error.h"

#include <nlohmann/json.hpp>
#include <utility>

#include "api/json_output.h"

namespace kiln::api {

ApiError::ApiError(int status, std::string type, std::string message, std::string param)
    : status_(status),
      type_(std::move(type)),
      message_(std::move(message)),
      param_(std::move(param)) {}

ApiError ValidationError(std::string_view detail, std::string param) {
  return ApiError(422, "validation", "Input validation error: " + std::string(detail),
                  std::move(param));
}

ApiError BadJsonError(std::string_view detail) {
  return ApiError(400, "validation",
                  "Failed to parse the request body as JSON: " + std::string(detail));
}

ApiError WrongTypeError(std::string_view path, std::string_view detail) {
  std::string message = "Failed to deserialize the JSON body into the target type: ";
  if (!path.empty()) message += std::string(path) + ": ";
  message += detail;
  std::string param(path);
  if (size_t dot = param.rfind('.'); dot != std::string::npos) param = param.substr(dot + 1);
  return ApiError(422, "validation", std::move(message), std::move(param));
}

ApiError OverloadedError() { return ApiError(429, "overloaded", "Model is overloaded"); }

ApiError GenerationError(std::string_view detail) {
  return ApiError(424, "generation", "Request failed during generation: " + std::string(detail));
}

ApiError IncompleteGenerationError() {
  return ApiError(500, "incomplete_generation", "Incomplete generation");
}

ApiError ShuttingDownError() { return ApiError(503, "unavailable", "Server is shutting down"); }

std::string TgiErrorJson(const ApiError& e) {
  return DumpJson({{"error", e.message()}, {"error_type", e.type()}});
}

namespace {

// OpenAI's error.type vocabulary, from the status.
const char* OpenAiErrorType(int status) {
  if (status == 401) return "authentication_error";
  if (status == 429) return "rate_limit_error";
  if (status >= 500) return "server_error";
  if (status == 424) return "generation_error";
  return "invalid_request_error";
}

}  // namespace

std::string OpenAiErrorJson(const ApiError& e) {
  nlohmann::json param = e.param().empty() ? nlohmann::json(nullptr) : nlohmann::json(e.param());
  return DumpJson({{"error",
                    {{"message", e.message()},
                     {"type", OpenAiErrorType(e.status())},
                     {"param", param},
                     {"code", e.type()}}}});
}

}  // namespace kiln::api
