// hash -> block id for the prefix cache: open addressing with linear probing over a fixed table
// (at most one entry per block), so registering and evicting blocks never allocates.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace kiln {

class BlockHashIndex {
 public:
  explicit BlockHashIndex(int32_t max_entries);

  int32_t Find(uint64_t hash) const;  // block id, or -1
  // False (and no change) when `hash` is already present.
  bool Insert(uint64_t hash, int32_t block);
  void Erase(uint64_t hash);  // `hash` must be present
  int32_t size() const { return size_; }

 private:
  struct Slot {
    uint64_t hash = 0;
    int32_t block = -1;  // -1 = empty
  };
  size_t Home(uint64_t hash) const { return static_cast<size_t>(hash) & mask_; }

  std::vector<Slot> slots_;
  size_t mask_ = 0;
  int32_t size_ = 0;
};

}  // namespace kiln
