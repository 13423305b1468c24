#include "model/read_ahead.h"

#include <cstdlib>
#include <cstring>
#include <initializer_list>

#include "kernels/ops.h"
#include "util/dtype.h"

namespace kiln {
namespace {

bool ReadAheadEnabled() {
  static const bool enabled = [] {
    const char* v = std::getenv("KILN_READAHEAD");
    return v == nullptr || std::strcmp(v, "0") != 0;
  }();
  return enabled;
}

// The matrices' bytes as one range when each starts where the previous one's (64-byte
// aligned) end is, as PackWeights lays them out; else the first matrix's alone.
ByteRange Union(std::initializer_list<const kernels::Matrix*> ms) {
  ByteRange out = StreamedBytes(**ms.begin());
  for (auto it = ms.begin() + 1; it != ms.end(); ++it) {
    const ByteRange r = StreamedBytes(**it);
    const uint64_t aligned_end = (out.bytes + 63) / 64 * 64;
    if (r.begin != out.begin + aligned_end) break;
    out.bytes = aligned_end + r.bytes;
  }
  return out;
}

}  // namespace

ByteRange StreamedBytes(const kernels::Matrix& m) {
  if (m.packed != nullptr) return {m.packed, kernels::PackedMatrixBytes(m)};
  return {m.data, static_cast<uint64_t>(m.rows) * m.row_bytes};
}

ReadAheadPlan::ReadAheadPlan(const ModelWeights& w) {
  for (const LayerWeights& l : w.layers) {
    sections_.push_back(Union({&l.wq, &l.wk, &l.wv}));
    sections_.push_back(StreamedBytes(l.wo));
    sections_.push_back(Union({&l.w_gate, &l.w_up}));
    sections_.push_back(StreamedBytes(l.w_down));
  }
  sections_.push_back(StreamedBytes(w.lm_head));
}

ByteRange ReadAheadPlan::After(int64_t layer, Section s) const {
  if (sections_.empty()) return {};
  return sections_[static_cast<size_t>(layer * kPerLayer + s + 1) % sections_.size()];
}

void ReadAheadPlan::Next(ThreadPool& pool, int64_t layer, Section s) const {
  if (!ReadAheadEnabled()) return;
  const ByteRange r = After(layer, s);
  pool.ReadAheadWhileIdle(r.begin, r.bytes);
}

}  // namespace kiln
