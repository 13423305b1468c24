// Which weight bytes Forward streams next: the plan behind ThreadPool::ReadAheadWhileIdle.
// Decode reads every weight once per step, section by section (per layer: Q/K/V, O, gate+up,
// down; then the LM head). While one section runs, the pool's idle threads prefetch the next
// one's first bytes, so that memory does not sit idle during serial work between sections.
#pragma once

#include <cstdint>
#include <vector>

#include "model/weights.h"
#include "util/thread_pool.h"

namespace kiln {

struct ByteRange {
  const uint8_t* begin = nullptr;
  uint64_t bytes = 0;
};

// The bytes the kernels stream for m: its packed copy (Matrix::packed), else its stored rows.
ByteRange StreamedBytes(const kernels::Matrix& m);

class ReadAheadPlan {
 public:
  // Sections per layer, in Forward's order.
  enum Section : int64_t { kQkv = 0, kO = 1, kGateUp = 2, kDown = 3, kPerLayer = 4 };

  ReadAheadPlan() = default;
  explicit ReadAheadPlan(const ModelWeights& w);

  // Call as section `s` of `layer` starts (the LM head: layer = number of layers, s = kQkv):
  // points the pool's read-ahead at the section after it (after the LM head: layer 0's Q/K/V,
  // which the next decode step reads first). KILN_READAHEAD=0 turns this off (measurement).
  void Next(ThreadPool& pool, int64_t layer, Section s) const;

  // The bytes Next points the pool at (empty for a plan of no weights).
  ByteRange After(int64_t layer, Section s) const;

 private:
  std::vector<ByteRange> sections_;  // [layers * kPerLayer + 1], Forward's order
};

}  // namespace kiln
