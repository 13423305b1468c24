// STREAM-style read-bandwidth probe: the roofline for decode (weights streamed once per token).
// Each thread sums its own contiguous slice of a buffer with 512-bit (or 256-bit) loads; the
// figure is bytes read / wall time of the slowest thread, best of R passes.
// Usage: bandwidth_bench [--mib 1024,64] [--reps 5] [--threads 1,2]
// Prints one JSON line per (size, threads, page size): transparent huge pages (2 MiB, what an
// anonymous copy of the weights gets) and 4 KiB pages (what an mmapped model file gets).
#include <pthread.h>
#include <sched.h>
#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace {

using Clock = std::chrono::steady_clock;

#if defined(__x86_64__)
__attribute__((target("avx512f"))) uint64_t SumAvx512(const uint8_t* p, size_t bytes) {
  __m512i a0 = _mm512_setzero_si512(), a1 = a0, a2 = a0, a3 = a0;
  for (size_t i = 0; i + 256 <= bytes; i += 256) {
    a0 = _mm512_add_epi64(a0, _mm512_load_si512(p + i));
    a1 = _mm512_add_epi64(a1, _mm512_load_si512(p + i + 64));
    a2 = _mm512_add_epi64(a2, _mm512_load_si512(p + i + 128));
    a3 = _mm512_add_epi64(a3, _mm512_load_si512(p + i + 192));
  }
  alignas(64) uint64_t lanes[8];
  _mm512_store_si512(lanes, _mm512_add_epi64(_mm512_add_epi64(a0, a1), _mm512_add_epi64(a2, a3)));
  uint64_t s = 0;
  for (uint64_t v : lanes) s += v;
  return s;
}
#endif

uint64_t SumPortable(const uint8_t* p, size_t bytes) {
  uint64_t a[8] = {};
  for (size_t i = 0; i + 64 <= bytes; i += 64) {
    for (int j = 0; j < 8; ++j) {
      uint64_t v;
      std::memcpy(&v, p + i + 8 * j, 8);
      a[j] += v;
    }
  }
  uint64_t s = 0;
  for (uint64_t v : a) s += v;
  return s;
}

uint64_t Sum(const uint8_t* p, size_t bytes) {
#if defined(__x86_64__)
  if (__builtin_cpu_supports("avx512f")) return SumAvx512(p, bytes);
#endif
  return SumPortable(p, bytes);
}

void Pin(int core) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(core, &set);
  pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

// GB/s reading `bytes` of buf with `threads` pinned threads (best of reps).
double Measure(const uint8_t* buf, size_t bytes, int threads, int reps, uint64_t* sink) {
  double best = 0;
  for (int r = 0; r < reps; ++r) {
    std::atomic<int> ready{0};
    std::atomic<bool> go{false};
    std::vector<double> secs(threads);
    std::vector<std::thread> ts;
    const size_t slice = bytes / threads / 4096 * 4096;
    for (int t = 0; t < threads; ++t) {
      ts.emplace_back([&, t] {
        Pin(t);
        ready.fetch_add(1);
        while (!go.load()) {
        }
        auto t0 = Clock::now();
        uint64_t s = Sum(buf + t * slice, slice);
        secs[t] = std::chrono::duration<double>(Clock::now() - t0).count();
        __atomic_fetch_add(sink, s, __ATOMIC_RELAXED);
      });
    }
    while (ready.load() < threads) {
    }
    go.store(true);
    for (auto& t : ts) t.join();
    const double slowest = *std::max_element(secs.begin(), secs.end());
    best = std::max(best, static_cast<double>(slice) * threads / slowest / 1e9);
  }
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<size_t> mibs = {1024, 64};
  int reps = 5;
  std::vector<int> thread_counts = {1, 2};
  for (int i = 1; i < argc; ++i) {
    auto next = [&] { return i + 1 < argc ? std::string(argv[++i]) : std::string(); };
    auto list = [](const std::string& s) {
      std::vector<size_t> v;
      for (size_t p = 0; p < s.size();) {
        size_t q = s.find(',', p);
        if (q == std::string::npos) q = s.size();
        v.push_back(std::strtoull(s.substr(p, q - p).c_str(), nullptr, 10));
        p = q + 1;
      }
      return v;
    };
    std::string a = argv[i];
    if (a == "--mib")
      mibs = list(next());
    else if (a == "--reps")
      reps = std::atoi(next().c_str());
    else if (a == "--threads") {
      thread_counts.clear();
      for (size_t t : list(next())) thread_counts.push_back(static_cast<int>(t));
    } else {
      std::fprintf(stderr, "usage: bandwidth_bench [--mib 1024,64] [--reps 5] [--threads 1,2]\n");
      return 2;
    }
  }
  uint64_t sink = 0;
  for (size_t mib : mibs) {
    const size_t bytes = mib << 20;
    for (bool huge : {true, false}) {
      void* mem = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (mem == MAP_FAILED) return 1;
      madvise(mem, bytes, huge ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
      auto* buf = static_cast<uint8_t*>(mem);
      std::memset(buf, 1, bytes);  // fault every page in before timing
      for (int t : thread_counts) {
        const double gbs = Measure(buf, bytes, t, reps, &sink);
        std::printf("{\"mib\": %zu, \"threads\": %d, \"pages\": \"%s\", \"read_gb_s\": %.1f}\n",
                    mib, t, huge ? "thp" : "4k", gbs);
      }
      munmap(mem, bytes);
    }
  }
  return sink == 42 ? 1 : 0;  // keeps the sums alive
}
