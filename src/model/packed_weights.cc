#include "model/packed_weights.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include "kernels/ops.h"

namespace kiln {
namespace {

bool RepackEnabled() {
  const char* v = std::getenv("KILN_REPACK");
  return v == nullptr || std::strcmp(v, "0") != 0;
}

std::vector<kernels::Matrix*> PackableMatrices(ModelWeights& w) {
  std::vector<kernels::Matrix*> out;
  for (LayerWeights& l : w.layers) {
    for (kernels::Matrix* m : {&l.wq, &l.wk, &l.wv, &l.wo, &l.w_gate, &l.w_up, &l.w_down}) {
      out.push_back(m);
    }
  }
  out.push_back(&w.lm_head);
  return out;
}

}  // namespace

HugeBuffer PackWeights(ModelWeights& w) { return PackMatrices(PackableMatrices(w)); }

HugeBuffer PackMatrices(const std::vector<kernels::Matrix*>& matrices) {
  if (!RepackEnabled()) return {};
  struct Job {
    kernels::Matrix* m;
    uint64_t offset, bytes;
  };
  std::vector<Job> jobs;
  uint64_t total = 0;
  for (kernels::Matrix* m : matrices) {
    if (m->packed != nullptr) continue;  // mapped from a Kiln artifact already packed
    const uint64_t bytes = kernels::PackedMatrixBytes(*m);
    if (bytes == 0) continue;
    jobs.push_back({m, total, bytes});
    total += (bytes + 63) / 64 * 64;
  }
  if (jobs.empty()) return {};
  HugeBuffer buffer(total);
  // A 1B model is ~1 GB of weights to transpose: spread the matrices over the CPUs.
  std::atomic<size_t> next{0};
  const auto work = [&] {
    for (size_t i = next++; i < jobs.size(); i = next++) {
      kernels::PackMatrix(*jobs[i].m, buffer.data() + jobs[i].offset);
    }
  };
  const unsigned threads = std::clamp(std::thread::hardware_concurrency(), 1u, 8u);
  std::vector<std::thread> pool;
  for (unsigned t = 1; t < threads; ++t) pool.emplace_back(work);
  work();
  for (std::thread& t : pool) t.join();
  for (const Job& j : jobs) j.m->packed = buffer.data() + j.offset;
  return buffer;
}

}  // namespace kiln
