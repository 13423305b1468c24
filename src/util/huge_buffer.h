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
  explicit HugeBuffer(uint64_t bytes);
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
