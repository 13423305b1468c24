// An anonymous memory region backed by transparent huge pages where the kernel allows (2 MiB
// pages: one TLB entry per 2 MiB instead of per 4 KiB, which matters when decode streams the
// whole model from DRAM for every token). bench/kernels_bench measures decode from it against
// 4 KiB pages; no measurable difference yet on the 2-core development VM, so the model keeps
// its weights in the file mapping.
#pragma once

#include <cstddef>
#include <cstdint>

namespace kiln {

class HugeBuffer {
 public:
  HugeBuffer() = default;
  // Maps `bytes` (rounded up to 2 MiB) of zeroed memory; throws kiln::Error when out of memory.
  // The kernel zeroes each page when it is first touched, so nothing is written up front.
  // `huge_pages` false: 4 KiB pages (no MADV_HUGEPAGE), for memory that is touched sparsely,
  // where faulting in a whole 2 MiB page per first touch would cost more than it saves.
  explicit HugeBuffer(uint64_t bytes, bool huge_pages = true);
  ~HugeBuffer();
  HugeBuffer(HugeBuffer&& other) noexcept;
  HugeBuffer& operator=(HugeBuffer&& other) noexcept;
  HugeBuffer(const HugeBuffer&) = delete;
  HugeBuffer& operator=(const HugeBuffer&) = delete;

  uint8_t* data() const { return data_; }
  uint64_t size() const { return size_; }

 private:
  uint8_t* data_ = nullptr;
  uint64_t size_ = 0;
};

}  // namespace kiln
