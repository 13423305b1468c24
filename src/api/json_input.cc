#include "api/json_input.h"

#include <string>

#include "api/api_error.h"
#include "util/error.h"
#include "util/json_depth.h"

namespace kiln::api {
namespace {

// nlohmann's messages start with "[json.exception.parse_error.101] parse error at line 1, ...";
// the bracketed tag means nothing to a client.
std::string CleanMessage(const char* what) {
  std::string m(what);
  if (!m.empty() && m[0] == '[') {
    size_t close = m.find("] ");
    if (close != std::string::npos) m = m.substr(close + 2);
  }
  return m;
}

}  // namespace

nlohmann::json ParseJsonObject(std::string_view body, int max_depth) {
  if (JsonNestingDepth(body, max_depth) > max_depth) {
    throw BadJsonError(StrCat("nesting deeper than ", max_depth, " levels"));
  }
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(body.begin(), body.end());
  } catch (const nlohmann::json::exception& e) {
    throw BadJsonError(CleanMessage(e.what()));
  }
  if (!doc.is_object()) {
    throw WrongTypeError("", StrCat("invalid type: ", doc.type_name(), ", expected an object"));
  }
  return doc;
}

}  // namespace kiln::api
