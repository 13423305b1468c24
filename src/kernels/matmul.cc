// MatMul: validation, activation quantization, and the split of output rows over the pool.
// The per-target row loops are in matmul-inl.h.
#include "kernels/matmul.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "kernels/hwy_config.h"
#include "kernels/ops.h"
#include "kernels/parallel.h"
#include "kernels/quantize.h"
#include "kernels/scalar_ops.h"
#include "util/dtype.h"
#include "util/error.h"
#include "util/half.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/matmul.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"

// GCC 12's AVX-512 intrinsics pass _mm512_undefined_*() as unused merge sources, which
// -Wmaybe-uninitialized reports once they are inlined into the tile loops (false positive).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

// AVX3_DL code gets AVX-512 VNNI (Highway 1.0.3's AVX3_DL target string lacks it, although its
// runtime check requires it). Everything up to the pop below must be compiled with it, since
// always-inline functions cannot cross target-option boundaries; ordinary headers, including
// those the -inl.h files use, must all be included above, or their inline functions would be
// compiled for AVX-512 too.
#if HWY_TARGET == HWY_AVX3_DL
#pragma GCC push_options
#pragma GCC target("avx512vnni")
#define KILN_AVX512VNNI_PRAGMA 1
#endif

#include "kernels/matmul-inl.h"

HWY_BEFORE_NAMESPACE();
namespace kiln::kernels::HWY_NAMESPACE {

void MatMulRowsT(const MatMulArgs& a, int64_t n0, int64_t n1) { MatMulRowsImpl(a, n0, n1); }

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

namespace {

// Output rows are handed out in multiples of this (keeps workers' ranges tile-aligned).
constexpr int64_t kRowGrain = 16;
// Activation rows quantized on the pool rather than on the calling thread from this many on.
constexpr int64_t kParallelQuantizeRows = 16;

bool IsQuantized(DType t) { return t == DType::kQ8_0 || t == DType::kQ4_0 || t == DType::kQ4_1; }

void CheckMatMul(const Matrix& w, int64_t m) {
  const DTypeInfo& info = GetDTypeInfo(w.dtype);
  KILN_CHECK(IsQuantized(w.dtype) || w.dtype == DType::kF32 || w.dtype == DType::kF16 ||
                 w.dtype == DType::kBF16,
             "MatMul with ", info.name, " weights is not supported yet");
  KILN_CHECK(m >= 0 && w.rows >= 0 && w.cols > 0 && w.cols % info.block_elems == 0 &&
                 w.row_bytes >= BytesForElements(w.dtype, w.cols).value_or(~uint64_t{0}),
             "MatMul: bad shape m=", m, " W=[", w.rows, ", ", w.cols, "] (", info.name,
             ", row_bytes ", w.row_bytes, ")");
}

}  // namespace

void MatMul(const Matrix& w, const float* x, int64_t m, float* y, ThreadPool& pool) {
  CheckMatMul(w, m);
  if (m == 0 || w.rows == 0) return;
  MatMulArgs args;
  args.w = &w;
  args.x = x;
  args.m = m;
  args.y = y;
  if (IsQuantized(w.dtype)) {
    // Owned by the calling thread; workers only read it during this call.
    thread_local ActsBuffer buffer;
    args.acts = buffer.Get(m, w.cols);
    const ActsView acts = args.acts;
    const auto quantize = [x, &acts](int64_t r0, int64_t r1) {
      QuantizeActs(x + r0 * acts.k, r1 - r0, acts.Row(r0));
    };
    if (m >= kParallelQuantizeRows) {
      SplitRange(pool, m, 1, quantize);
    } else {
      quantize(0, m);
    }
  }
  const auto rows = HWY_DYNAMIC_DISPATCH(MatMulRowsT);
  SplitRange(pool, w.rows, kRowGrain,
             [&args, rows](int64_t n0, int64_t n1) { rows(args, n0, n1); });
}

}  // namespace kiln::kernels
#endif  // HWY_ONCE
