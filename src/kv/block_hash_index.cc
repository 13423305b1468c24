#include "kv/block_hash_index.h"

#include "util/error.h"

namespace kiln {

BlockHashIndex::BlockHashIndex(int32_t max_entries) {
  size_t capacity = 16;
  while (capacity < 2 * static_cast<size_t>(max_entries)) capacity *= 2;  // load <= 1/2
  slots_.resize(capacity);
  mask_ = capacity - 1;
}

int32_t BlockHashIndex::Find(uint64_t hash) const {
  for (size_t i = Home(hash);; i = (i + 1) & mask_) {
    const Slot& s = slots_[i];
    if (s.block < 0) return -1;
    if (s.hash == hash) return s.block;
  }
}

bool BlockHashIndex::Insert(uint64_t hash, int32_t block) {
  KILN_CHECK(2 * static_cast<size_t>(size_ + 1) <= slots_.size(), "block hash index is full");
  size_t i = Home(hash);
  for (; slots_[i].block >= 0; i = (i + 1) & mask_) {
    if (slots_[i].hash == hash) return false;
  }
  slots_[i] = {hash, block};
  ++size_;
  return true;
}

// Backward-shift deletion: pulls later entries of the probe run into the hole so lookups never
// need tombstones.
void BlockHashIndex::Erase(uint64_t hash) {
  size_t i = Home(hash);
  while (slots_[i].hash != hash || slots_[i].block < 0) {
    KILN_CHECK(slots_[i].block >= 0, "block hash index: erasing a missing hash");
    i = (i + 1) & mask_;
  }
  for (size_t j = (i + 1) & mask_; slots_[j].block >= 0; j = (j + 1) & mask_) {
    const size_t home = Home(slots_[j].hash);
    // Entry j may move into hole i only if its home is not in the cyclic range (i, j].
    const bool home_in_range = i <= j ? (home > i && home <= j) : (home > i || home <= j);
    if (!home_in_range) {
      slots_[i] = slots_[j];
      i = j;
    }
  }
  slots_[i] = Slot{};
  --size_;
}

}  // namespace kiln
