// The OpenAPI 3 document of Kiln's HTTP API (served at /api-doc/openapi.json).
#pragma once

#include <string>

namespace kiln {

std::string OpenApiDocument(const std::string& version);

}  // namespace kiln
