// Errors: one exception type carrying a message meant for users ("file: problem").
#pragma once

#include <stdexcept>
#include <string>
#include <type_traits>

namespace kiln {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Throws kiln::Error when `cond` is false; the message is built only on failure.
#define KILN_CHECK(cond, ...)                                  \
  do {                                                         \
    if (!(cond)) throw ::kiln::Error(::kiln::StrCat(__VA_ARGS__)); \
  } while (0)

template <typename... Args>
std::string StrCat(const Args&... args) {
  std::string out;
  auto append = [&out](const auto& a) {
    using T = std::decay_t<decltype(a)>;
    if constexpr (std::is_arithmetic_v<T> && !std::is_same_v<T, char>) {
      out += std::to_string(a);
    } else {
      out += a;
    }
  };
  (append(args), ...);
  return out;
}

}  // namespace kiln
