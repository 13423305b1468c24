// STREAM-style read-bandwidth probe: the roofline for decode (weights streamed once per token).
// Each thread sums its own contiguous slice of a buffer with 512-bit loads (portable 64-bit
// loads without AVX-512), as one stream or as S streams read in lockstep; the figure is bytes
// read / wall time of the slowest thread, best of R passes. The roofline is the best figure.
// Usage: bandwidth_bench [--mib 1024,64] [--reps 5] [--threads 1,2] [--streams 1,4]
// Prints one JSON line per (size, threads, streams, page size): transparent huge pages (2 MiB, what
// an anonymous copy of the weights gets) and 4 KiB pages (what an mmapped model file gets).
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
// Reads `streams` equal parts of [p, p + bytes) in lockstep, 64 bytes of each per step, and
// sets *read to the bytes it read. A decode kernel may read several panels at once, and how a
// core draws bandwidth depends on the stream count (Zen 4: one stream is fastest).
__attribute__((target("avx512f"))) uint64_t SumAvx512(const uint8_t* p, size_t bytes, int streams,
                                                      size_t* read) {
  const size_t part = bytes / streams / 256 * 256;
  *read = part * streams;
  __m512i a0 = _mm512_setzero_si512(), a1 = a0, a2 = a0, a3 = a0;
  if (streams == 1) {
    for (size_t i = 0; i < part; i += 256) {
      a0 = _mm512_add_epi64(a0, _mm512_load_si512(p + i));
      a1 = _mm512_add_epi64(a1, _mm512_load_si512(p + i + 64));
      a2 = _mm512_add_epi64(a2, _mm512_load_si512(p + i + 128));
      a3 = _mm512_add_epi64(a3, _mm512_load_si512(p + i + 192));
    }
  } else {
    for (size_t i = 0; i < part; i += 64) {
      for (int s = 0; s + 4 <= streams; s += 4) {
        a0 = _mm512_add_epi64(a0, _mm512_load_si512(p + (s + 0) * part + i));
        a1 = _mm512_add_epi64(a1, _mm512_load_si512(p + (s + 1) * part + i));
        a2 = _mm512_add_epi64(a2, _mm512_load_si512(p + (s + 2) * part + i));
        a3 = _mm512_add_epi64(a3, _mm512_load_si512(p + (s + 3) * part + i));
      }
    }
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

// Sums [p, p + bytes) in `streams` parts (AVX-512 only; one stream elsewhere) and sets *read to
// the bytes it read.
uint64_t Sum(const uint8_t* p, size_t bytes, int streams, size_t* read) {
#if defined(__x86_64__)
  if (__builtin_cpu_supports("avx512f")) return SumAvx512(p, bytes, streams, read);
#endif
  *read = bytes / 64 * 64;
  return SumPortable(p, bytes);
}

void Pin(int core) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(core, &set);
  pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

// GB/s reading `bytes` of buf with `threads` pinned threads (best of reps).
double Measure(const uint8_t* buf, size_t bytes, int threads, int streams, int reps,
               uint64_t* sink) {
  double best = 0;
  for (int r = 0; r < reps; ++r) {
    std::atomic<int> ready{0};
    std::atomic<bool> go{false};
    std::vector<double> secs(threads);
    std::vector<size_t> read(threads);
    std::vector<std::thread> ts;
    const size_t slice = bytes / threads / 4096 * 4096;
    for (int t = 0; t < threads; ++t) {
      ts.emplace_back([&, t] {
        Pin(t);
        ready.fetch_add(1);
        while (!go.load()) {
        }
        auto t0 = Clock::now();
        uint64_t s = Sum(buf + t * slice, slice, streams, &read[t]);
        secs[t] = std::chrono::duration<double>(Clock::now() - t0).count();
        __atomic_fetch_add(sink, s, __ATOMIC_RELAXED);
      });
    }
    while (ready.load() < threads) {
    }
    go.store(true);
    for (auto& t : ts) t.join();
    const double slowest = *std::max_element(secs.begin(), secs.end());
    const double summed = static_cast<double>(read[0]) * threads;
    best = std::max(best, summed / slowest / 1e9);
  }
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<size_t> mibs = {1024, 64};
  int reps = 5;
  std::vector<int> thread_counts = {1, 2};
  std::vector<int> stream_counts = {1, 4};
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
    } else if (a == "--streams") {
      stream_counts.clear();
      for (size_t t : list(next())) {
        if (t != 1 && t % 4 != 0) {
          std::fprintf(stderr, "--streams: 1 or a multiple of 4\n");
          return 2;
        }
        stream_counts.push_back(static_cast<int>(t));
      }
    } else {
      std::fprintf(stderr,
                   "usage: bandwidth_bench [--mib 1024,64] [--reps 5] [--threads 1,2] "
                   "[--streams 1,4]\n");
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
        for (int streams : stream_counts) {
          const double gbs = Measure(buf, bytes, t, streams, reps, &sink);
          std::printf(
              "{\"mib\": %zu, \"threads\": %d, \"streams\": %d, \"pages\": \"%s\", "
              "\"read_gb_s\": %.1f}\n",
              mib, t, streams, huge ? "thp" : "4k", gbs);
        }
      }
      munmap(mem, bytes);
    }
  }
  return sink == 42 ? 1 : 0;  // keeps the sums alive
}
