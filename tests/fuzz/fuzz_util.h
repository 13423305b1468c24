// Helpers shared by the fuzz targets.
#pragma once

#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

// FUZZ_CHECK(cond): a broken invariant. Prints the condition and aborts, which libFuzzer
// reports as a crash, saving the input.
#define FUZZ_CHECK(cond)                                                                   \
  do {                                                                                     \
    if (!(cond)) {                                                                         \
      std::fprintf(stderr, "%s:%d: FUZZ_CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
      std::abort();                                                                        \
    }                                                                                      \
  } while (0)

namespace kiln::fuzz {

// A path whose contents are exactly `data`, for readers that open and mmap files: one memfd
// (no disk I/O), rewritten for every input.
inline std::string WriteInputFile(const uint8_t* data, size_t size) {
  static const int fd = memfd_create("kiln_fuzz_input", MFD_CLOEXEC);
  FUZZ_CHECK(fd >= 0);
  FUZZ_CHECK(ftruncate(fd, 0) == 0);
  FUZZ_CHECK(size == 0 || pwrite(fd, data, size, 0) == static_cast<ssize_t>(size));
  return "/proc/self/fd/" + std::to_string(fd);
}

}  // namespace kiln::fuzz
