// MatMul: validation, activation quantization, and the split of output rows over the pool.
// The per-target row loops are in matmul-inl.h.
#include "kernels/matmul.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <span>
#include <type_traits>
#include <vector>

#include "kernels/hwy_config.h"
#include "kernels/kquant.h"
#include "kernels/ops.h"
#include "kernels/panel_scratch.h"
#include "kernels/parallel.h"
#include "kernels/quantize.h"
#include "kernels/scalar_ops.h"
#include "util/dtype.h"
#include "util/error.h"
#include "util/half.h"

#if defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>
#endif
#if defined(__x86_64__) && defined(__linux__)
#include <sys/syscall.h>
#include <unistd.h>
#endif

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/matmul.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"

// GCC 12's AVX-512 intrinsics pass _mm512_undefined_*() as unused merge sources, which
// -Wmaybe-uninitialized (and at -O1, inlined into a lambda, -Wuninitialized) reports once they
// are inlined into the tile loops (false positives).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

// AVX3_DL code gets AVX-512 VNNI (Highway 1.0.3's AVX3_DL target string lacks it, although its
// runtime check requires it) and AVX512_BF16, which AVX3_DL CPUs may lack (Ice Lake): only the
// vdpbf16ps panels use it (fpanel-inl.h, the compiler emits no BF16 instruction by itself), and
// they run only where BF16DotEnabled() found it. Everything up to the pop below must be compiled
// with these, since always-inline functions cannot cross target-option boundaries; ordinary
// headers, including those the -inl.h files use, must all be included above, or their inline
// functions would be compiled for AVX-512 too.
#if HWY_TARGET == HWY_AVX3_DL
#pragma GCC push_options
#pragma GCC target("avx512vnni,avx512bf16,amx-tile,amx-int8,amx-bf16")
#define KILN_AVX512VNNI_PRAGMA 1
#endif

#include "kernels/matmul-inl.h"

HWY_BEFORE_NAMESPACE();
namespace kiln::kernels::HWY_NAMESPACE {

void MatMulRowsT(const MatMulArgs& a, int64_t n0, int64_t n1) { MatMulRowsImpl(a, n0, n1); }

// Bytes of w packed for this target's kernels (0: this target reads the stored layout).
uint64_t PackedMatrixBytesT(const Matrix& w) {
#if KILN_FLOAT_PANELS
  const int64_t float_panels = (w.rows + FloatPanelRows() - 1) / FloatPanelRows();
  uint64_t float_bytes = 0;
  if (WithFloatType(w.dtype, [&](auto wt) {
        float_bytes = static_cast<uint64_t>(float_panels * FloatPanelStride<decltype(wt)>(w.cols));
      })) {
    return float_bytes;
  }
#endif
#if KILN_QUANT_PANELS
  if (w.dtype == DType::kQ8_0 || w.dtype == DType::kQ4_0 || w.dtype == DType::kQ4_1) {
    return PackedQuantBytes(w);
  }
#endif
  (void)w;
  return 0;
}

void PackMatrixT(const Matrix& w, uint8_t* dst) {
#if KILN_FLOAT_PANELS
  if (WithFloatType(w.dtype, [&](auto wt) { PackFloatMatrixT<decltype(wt)>(w, dst); })) return;
#endif
#if KILN_QUANT_PANELS
  switch (w.dtype) {
    case DType::kQ8_0:
      PackQuantMatrix<DType::kQ8_0>(w, dst);
      break;
    case DType::kQ4_0:
      PackQuantMatrix<DType::kQ4_0>(w, dst);
      break;
    case DType::kQ4_1:
      PackQuantMatrix<DType::kQ4_1>(w, dst);
      break;
    default:
      break;
  }
#else
  (void)w;
  (void)dst;
#endif
}

}  // namespace kiln::kernels::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_TARGET == HWY_AVX3_DL
#pragma GCC pop_options
#undef KILN_AVX512VNNI_PRAGMA
#endif
#pragma GCC diagnostic pop

#if HWY_ONCE
namespace kiln::kernels {

HWY_EXPORT(MatMulRowsT);
HWY_EXPORT(PackedMatrixBytesT);
HWY_EXPORT(PackMatrixT);

namespace {

// Output rows are handed out in chunks of multiples of this (keeps workers' ranges aligned to
// the float panels' 4-panel tiles and the quantized decode's four panel streams).
constexpr int64_t kRowGrain = 64;
// Chunks per worker: enough to even out a worker slowed down, few enough that each chunk is a
// long stream for the prefetchers.
constexpr int64_t kChunksPerWorker = 4;
// Activation rows quantized on the pool rather than on the calling thread from this many on.
constexpr int64_t kParallelQuantizeRows = 16;

// KILN_PREFETCH=0 / 1 turns the weight prefetch off / on everywhere (for measuring what it
// brings); unset, each kernel uses it where it was measured to help.
const char* PrefetchOverride() { return std::getenv("KILN_PREFETCH"); }

bool PrefetchEnabled() {
  static const bool enabled = [] {
    const char* v = PrefetchOverride();
    return v == nullptr || std::strcmp(v, "0") != 0;
  }();
  return enabled;
}

// Single-row decode over float panels: on AMD cores with AVX-512 (Zen 4) the prefetch costs a
// third (Qwen2.5-0.5B bf16: 27-32 tok/s with it, 43 without: the hardware prefetchers keep up
// with the panels' streams there), while batched rows (m = 2, 4) still gain 15-30% from it
// (docs/benchmarks.md, "A Zen 4 host"). Elsewhere it was measured to help and stays on.
bool FloatDecodePrefetchEnabled() {
  static const bool enabled = [] {
    if (PrefetchOverride() != nullptr) return PrefetchEnabled();
#if defined(__x86_64__)
    return !(__builtin_cpu_is("amd") && __builtin_cpu_supports("avx512f"));
#else
    return true;
#endif
  }();
  return enabled;
}

// Quantized panels' decode prefetch (qgemm_vnni-inl.h): into L2 (prefetcht1) on Intel cores,
// where prefetching into L1 held q4_0 decode at 80% of the bandwidth roofline (Qwen2.5-0.5B
// q4_0, 2 threads: 90 tok/s into L1, 108 into L2; Llama-3.2-1B q4_0: 37 and 43); into L1 on
// AMD cores, where it was tuned and where T1 / T2 prefetches are sometimes dropped (Zen 4).
// KILN_PREFETCH_L2=0 / 1 forces either (docs/benchmarks.md).
bool QuantPrefetchToL2() {
  static const bool enabled = [] {
    if (const char* v = std::getenv("KILN_PREFETCH_L2")) return std::strcmp(v, "0") != 0;
#if defined(__x86_64__)
    return !__builtin_cpu_is("amd");
#else
    return false;
#endif
  }();
  return enabled;
}

// Quantized panels' decode reads each worker's panels as 4 streams side by side on Intel cores,
// whose memory parallelism one stream leaves unused (probe, 2 threads: 31 GB/s for one stream,
// 34 for four; Llama-3.2-1B q8_0 decode 22.4 -> 23.9 tok/s, q4_0 40 -> 43), and as one
// contiguous stream on AMD cores, where one stream per core was measured best (Zen 4, one
// thread: 30 GB/s for one stream, 20 for four). KILN_DECODE_STREAMS=1 / 2 / 4 forces a count.
int QuantDecodeStreams() {
  static const int streams = [] {
    if (const char* v = std::getenv("KILN_DECODE_STREAMS")) {
      const int s = std::atoi(v);
      return s >= 4 ? 4 : s >= 2 ? 2 : 1;
    }
#if defined(__x86_64__)
    return __builtin_cpu_is("amd") ? 1 : 4;
#else
    return 1;
#endif
  }();
  return streams;
}

// bf16 weights on AVX3_DL CPUs with AVX512_BF16 run on vdpbf16ps (fpanel-inl.h); KILN_BF16DOT=0
// keeps them on f32 FMAs over the same bf16-rounded activations (for measuring what it brings).
bool BF16DotEnabled() {
  static const bool enabled = [] {
    const char* v = std::getenv("KILN_BF16DOT");
    if (v != nullptr && std::strcmp(v, "0") == 0) return false;
#if defined(__x86_64__)
    return __builtin_cpu_supports("avx512bf16") != 0;
#else
    return false;
#endif
  }();
  return enabled;
}

// Whether the CPU has AMX tiles with the cpuid leaf 7 EDX `feature` bit (AMX-INT8, AMX-BF16) and
// the kernel grants this process the tile state (Linux asks each process to request it once).
// KILN_AMX=0: no tiles.
bool AmxTilesGranted(unsigned feature) {
  const char* v = std::getenv("KILN_AMX");
  if (v != nullptr && std::strcmp(v, "0") == 0) return false;
#if defined(__x86_64__) && defined(__linux__)
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (!__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx)) return false;
  constexpr unsigned kAmxTile = 1u << 24;
  if ((edx & (kAmxTile | feature)) != (kAmxTile | feature)) return false;
  constexpr long kReqXcompPerm = 0x1023, kXfeatureXtiledata = 18;  // asm/prctl.h
  return syscall(SYS_arch_prctl, kReqXcompPerm, kXfeatureXtiledata) == 0;
#else
  (void)feature;
  return false;
#endif
}

// q8_0 / q4_0 / q4_1 panels with 16 or more x rows run on AMX tiles (qgemm_amx-inl.h) where the
// CPU has AMX-INT8; KILN_AMX=0 keeps them on the VNNI tiles (same results: for measuring).
bool AmxEnabled() {
  static const bool enabled = AmxTilesGranted(1u << 25);
  return enabled;
}

// bf16 panels run on AMX tiles for every M (fgemm_amx-inl.h) where the CPU has AMX-BF16;
// KILN_AMX=0 keeps them on vdpbf16ps (results then differ in f32 rounding, so it is fixed per
// process).
bool AmxBf16Enabled() {
  static const bool enabled = AmxTilesGranted(1u << 22);
  return enabled;
}

// Activations of bf16 weights, rounded to bf16 once per MatMulMulti call and kept by the calling
// thread (workers only read them during the call): as f32 for the FMA kernels and as pairs for
// the vdpbf16ps panels (MatMulArgs::x, x_bf16).
class Bf16ActsBuffer {
 public:
  // x [m, k] rounded; the pool rounds large m.
  void Round(const float* x, int64_t m, int64_t k, ThreadPool& pool) {
    const int64_t pairs = (k + 1) / 2;
    if (static_cast<int64_t>(rounded_.size()) < m * k) rounded_.resize(m * k);
    if (static_cast<int64_t>(pairs_.size()) < m * pairs) pairs_.resize(m * pairs);
    const auto round = [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        RoundRow(x + r * k, k, rounded_.data() + r * k, pairs_.data() + r * pairs);
      }
    };
    if (m >= kParallelQuantizeRows) {
      SplitRange(pool, m, 1, round);
    } else {
      round(0, m);
    }
  }
  const float* Rounded() const { return rounded_.data(); }
  const uint32_t* Pairs() const { return pairs_.data(); }

 private:
  // Each element converted once: its bf16 bits go to the pair, their f32 value to `rounded`.
  static void RoundRow(const float* x, int64_t k, float* rounded, uint32_t* pairs) {
    for (int64_t i = 0; i < k; ++i) {
      const uint16_t b = F32ToBf16(x[i]);
      rounded[i] = Bf16ToF32(b);
      if (i % 2 == 0) {
        pairs[i / 2] = b;
      } else {
        pairs[i / 2] |= uint32_t{b} << 16;
      }
    }
  }

  std::vector<float> rounded_;
  std::vector<uint32_t> pairs_;
};

bool IsQuantized(DType t) { return t == DType::kQ8_0 || t == DType::kQ4_0 || t == DType::kQ4_1; }
bool IsFloat(DType t) { return t == DType::kF32 || t == DType::kF16 || t == DType::kBF16; }

// Dispatch point for weight types whose MatMul lives in its own file (K-quants and q5_0/q5_1:
// kquant.cc); every other type runs the row kernels of matmul-inl.h.
bool HasOwnMatMul(DType t) { return HasKQuantKernels(t); }

void CheckMatMul(const Matrix& w, int64_t m) {
  const DTypeInfo& info = GetDTypeInfo(w.dtype);
  KILN_CHECK(IsQuantized(w.dtype) || IsFloat(w.dtype), "MatMul with ", info.name,
             " weights is not supported yet");
  KILN_CHECK(m >= 0 && w.rows >= 0 && w.cols > 0 && w.cols % info.block_elems == 0 &&
                 w.row_bytes >= BytesForElements(w.dtype, w.cols).value_or(~uint64_t{0}),
             "MatMul: bad shape m=", m, " W=[", w.rows, ", ", w.cols, "] (", info.name,
             ", row_bytes ", w.row_bytes, ")");
}

}  // namespace

bool QGemmEnabled() {
  static const bool enabled = [] {
    const char* v = std::getenv("KILN_QGEMM");
    return v == nullptr || std::strcmp(v, "0") != 0;
  }();
  return enabled;
}

void MatMulMulti(std::span<const MatMulOutput> outs, const float* x, int64_t m, ThreadPool& pool) {
  const int64_t count = static_cast<int64_t>(outs.size());
  KILN_CHECK(count >= 1 && count <= kMaxMatMulOutputs, "MatMulMulti: ", count, " outputs (1 to ",
             kMaxMatMulOutputs, " supported)");
  // Weight types with a MatMul of their own (K-quants, kquant.h) run there, together when all
  // are, else one matrix at a time.
  const auto own = [](const MatMulOutput& o) { return HasOwnMatMul(o.w->dtype); };
  if (std::all_of(outs.begin(), outs.end(), own)) {
    KQuantMatMulMulti(outs, x, m, pool);
    return;
  }
  if (std::any_of(outs.begin(), outs.end(), own)) {
    for (const MatMulOutput& o : outs) MatMul(*o.w, x, m, o.y, pool);
    return;
  }
  // One MatMulArgs per weight, and where each one's rows start in the concatenated row range.
  std::array<MatMulArgs, kMaxMatMulOutputs> args;
  std::array<int64_t, kMaxMatMulOutputs + 1> first_row{};
  bool any_quantized = false, any_bf16 = false;
  for (int64_t i = 0; i < count; ++i) {
    const Matrix& w = *outs[i].w;
    CheckMatMul(w, m);
    KILN_CHECK(w.cols == outs[0].w->cols, "MatMulMulti: weights with ", w.cols, " and ",
               outs[0].w->cols, " columns");
    args[i].w = &w;
    args[i].x = x;
    args[i].m = m;
    args[i].y = outs[i].y;
    args[i].prefetch = PrefetchEnabled();
    args[i].float_decode_prefetch = FloatDecodePrefetchEnabled();
    args[i].prefetch_to_l2 = QuantPrefetchToL2();
    args[i].decode_streams = QuantDecodeStreams();
    args[i].qgemm = QGemmEnabled();
    args[i].bf16_dot = BF16DotEnabled();
    args[i].amx = AmxEnabled();
    args[i].amx_bf16 = AmxBf16Enabled();
    first_row[i + 1] = first_row[i] + w.rows;
    any_quantized = any_quantized || IsQuantized(w.dtype);
    any_bf16 = any_bf16 || w.dtype == DType::kBF16;
  }
  const int64_t total_rows = first_row[count];
  if (m == 0 || total_rows == 0) return;
  if (any_bf16) {
    // bf16 weights multiply x rounded to bf16, on every target (ops.h).
    thread_local Bf16ActsBuffer bf16_acts;
    bf16_acts.Round(x, m, outs[0].w->cols, pool);
    for (int64_t i = 0; i < count; ++i) {
      if (args[i].w->dtype != DType::kBF16) continue;
      args[i].x = bf16_acts.Rounded();
      args[i].x_bf16 = bf16_acts.Pairs();
    }
  }
  if (any_quantized) {
    // Owned by the calling thread; workers only read it during this call.
    thread_local ActsBuffer buffer;
    const ActsView acts = buffer.Get(m, outs[0].w->cols);
    for (int64_t i = 0; i < count; ++i) args[i].acts = acts;
    const auto quantize = [x, &acts](int64_t r0, int64_t r1) {
      QuantizeActs(x + r0 * acts.k, r1 - r0, acts.Row(r0));
    };
    if (m >= kParallelQuantizeRows) {
      SplitRange(pool, m, 1, quantize);
    } else {
      quantize(0, m);
    }
  }
  // Output rows of all weights form one range, split over the pool in one pass.
  const auto rows = HWY_DYNAMIC_DISPATCH(MatMulRowsT);
  SplitRangeDynamic(pool, total_rows, kRowGrain, kChunksPerWorker, [&](int64_t n0, int64_t n1) {
    for (int64_t i = 0; i < count; ++i) {
      const int64_t lo = std::max(n0, first_row[i]), hi = std::min(n1, first_row[i + 1]);
      if (lo < hi) rows(args[i], lo - first_row[i], hi - first_row[i]);
    }
  });
}

uint64_t PackedMatrixBytes(const Matrix& w) {
  if (HasOwnMatMul(w.dtype)) return KQuantPackedBytes(w);
  // With the quantized row tiles (KILN_QGEMM=0) nothing reads quantized panels.
  if (!(IsFloat(w.dtype) || (IsQuantized(w.dtype) && QGemmEnabled())) || w.rows <= 0 ||
      w.cols <= 0) {
    return 0;
  }
  CheckMatMul(w, 0);
  return HWY_DYNAMIC_DISPATCH(PackedMatrixBytesT)(w);
}

void PackMatrix(const Matrix& w, uint8_t* dst) {
  KILN_CHECK(PackedMatrixBytes(w) > 0, "PackMatrix: ", GetDTypeInfo(w.dtype).name,
             " weights are not packed on this CPU");
  KILN_CHECK(reinterpret_cast<uintptr_t>(dst) % 64 == 0, "PackMatrix: dst must be 64-byte aligned");
  if (HasOwnMatMul(w.dtype)) {
    KQuantPack(w, dst);
    return;
  }
  HWY_DYNAMIC_DISPATCH(PackMatrixT)(w, dst);
}

void MatMul(const Matrix& w, const float* x, int64_t m, float* y, ThreadPool& pool) {
  if (HasOwnMatMul(w.dtype)) {
    KQuantMatMul(w, x, m, y, pool);
    return;
  }
  const MatMulOutput out{&w, y};
  MatMulMulti({&out, 1}, x, m, pool);
}

}  // namespace kiln::kernels
#endif  // HWY_ONCE
