#include "util/huge_buffer.h"

#include <sys/mman.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "util/error.h"

namespace kiln {
namespace {

constexpr uint64_t kHugePage = uint64_t{2} << 20;

}  // namespace

HugeBuffer::HugeBuffer(uint64_t bytes, bool huge_pages) {
  if (bytes == 0) return;
  const uint64_t size = (bytes + kHugePage - 1) / kHugePage * kHugePage;
  // Over-allocate by one huge page so that the region can start on a 2 MiB boundary (the
  // kernel only backs aligned 2 MiB ranges with huge pages).
  void* raw =
      mmap(nullptr, size + kHugePage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  KILN_CHECK(raw != MAP_FAILED, "cannot map ", size, " bytes: ", std::strerror(errno));
  const auto start = reinterpret_cast<uintptr_t>(raw);
  const uintptr_t aligned = (start + kHugePage - 1) / kHugePage * kHugePage;
  if (aligned > start) munmap(raw, aligned - start);
  const uintptr_t end = start + size + kHugePage;
  if (end > aligned + size) munmap(reinterpret_cast<void*>(aligned + size), end - aligned - size);
  data_ = reinterpret_cast<uint8_t*>(aligned);
  size_ = size;
  if (huge_pages) madvise(data_, size_, MADV_HUGEPAGE);  // advice only: 4 KiB pages still work
}

HugeBuffer::~HugeBuffer() {
  if (data_) munmap(data_, size_);
}

HugeBuffer::HugeBuffer(HugeBuffer&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}

HugeBuffer& HugeBuffer::operator=(HugeBuffer&& other) noexcept {
  if (this != &other) {
    if (data_) munmap(data_, size_);
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

}  // namespace kiln
