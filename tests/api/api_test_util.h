// Helpers for the api tests: run a parse that must fail and return its ApiError.
#pragma once

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "api/api_error.h"

namespace kiln::api {

template <typename F>
ApiError ExpectApiError(F&& f) {
  try {
    f();
  } catch (const ApiError& e) {
    return e;
  }
  ADD_FAILURE() << "expected an ApiError";
  return ApiError(0, "", "");
}

inline nlohmann::json J(const char* text) { return nlohmann::json::parse(text); }

}  // namespace kiln::api
