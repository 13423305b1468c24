#include "util/read_file.h"

#include <fstream>
#include <sstream>

#include "util/error.h"

namespace kiln {

std::string ReadFileText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  KILN_CHECK(in.good(), path, ": cannot open");
  std::stringstream ss;
  ss << in.rdbuf();
  KILN_CHECK(!in.bad(), path, ": read failed");
  return ss.str();
}

}  // namespace kiln
