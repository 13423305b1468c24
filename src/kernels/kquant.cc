// K-quant MatMul and dequantization: dispatch, activation quantization and the split of output
// rows over the pool. The per-target loops are in kquant-inl.h; layouts and numerics in
// kquant.h.
#include "kernels/kquant.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <new>

#include "kernels/hwy_config.h"
#include "kernels/matmul.h"
#include "kernels/ops.h"
#include "kernels/panel_scratch.h"
#include "kernels/parallel.h"
#include "kernels/quantize.h"
#include "util/dtype.h"
#include "util/error.h"
#include "util/half.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/kquant.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"

// See matmul.cc: GCC 12's AVX-512 intrinsics trip -Wmaybe-uninitialized, and AVX3_DL code is
// compiled with AVX-512 VNNI (512-bit vpdpwssd only).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#if HWY_TARGET == HWY_AVX3_DL
#pragma GCC push_options
#pragma GCC target("avx512vnni")
#define KILN_AVX512VNNI_PRAGMA 1
#endif

#include "kernels/kquant-inl.h"

HWY_BEFORE_NAMESPACE();
namespace kiln::kernels::HWY_NAMESPACE {

void KMatMulRowsT(const KMatMulArgs& a, int64_t n0, int64_t n1) { KMatMulRowsImpl(a, n0, n1); }

bool KDequantizeT(DType t, const uint8_t* src, int64_t n, float* dst) {
  return KDequantizeImpl(t, src, n, dst);
}

void QuantizeActsQ8KT(const float* x, int64_t rows, const KActsView& out) {
  QuantizeActsQ8KImpl(x, rows, out);
}

uint64_t KPackedBytesT(const Matrix& w) { return KPackedBytesImpl(w); }

void KPackT(const Matrix& w, uint8_t* dst) { KPackImpl(w, dst); }

}  // namespace kiln::kernels::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_TARGET == HWY_AVX3_DL
#pragma GCC pop_options
#undef KILN_AVX512VNNI_PRAGMA
#endif
#pragma GCC diagnostic pop

#if HWY_ONCE
namespace kiln::kernels {

HWY_EXPORT(KMatMulRowsT);
HWY_EXPORT(KDequantizeT);
HWY_EXPORT(QuantizeActsQ8KT);
HWY_EXPORT(KPackedBytesT);
HWY_EXPORT(KPackT);

namespace {

constexpr uint64_t kAlign = 64;
// Output rows per unit of work handed to a worker, and the activation row count from which
// quantization runs on the pool (as in matmul.cc).
constexpr int64_t kRowGrain = 16;
constexpr int64_t kParallelQuantizeRows = 16;

}  // namespace

void KActsBuffer::Free::operator()(uint8_t* p) const {
  ::operator delete[](p, std::align_val_t{kAlign});
}

KActsView KActsBuffer::Get(int64_t rows, int64_t k) {
  const uint64_t need = static_cast<uint64_t>(rows * (k / kQK_K)) * sizeof(BlockQ8_K);
  if (need > capacity_) {
    mem_.reset(static_cast<uint8_t*>(::operator new[](need, std::align_val_t{kAlign})));
    capacity_ = need;
  }
  return {k, reinterpret_cast<BlockQ8_K*>(mem_.get())};
}

namespace {

void CheckKMatMul(const Matrix& w, int64_t m) {
  const DTypeInfo& info = GetDTypeInfo(w.dtype);
  KILN_CHECK(HasKQuantKernels(w.dtype) && m >= 0 && w.rows >= 0 && w.cols > 0 &&
                 w.cols % info.block_elems == 0 &&
                 w.row_bytes >= BytesForElements(w.dtype, w.cols).value_or(~uint64_t{0}),
             "MatMul: bad shape m=", m, " W=[", w.rows, ", ", w.cols, "] (", info.name,
             ", row_bytes ", w.row_bytes, ")");
}

}  // namespace

void QuantizeActsQ8K(const float* x, int64_t rows, const KActsView& out) {
  HWY_DYNAMIC_DISPATCH(QuantizeActsQ8KT)(x, rows, out);
}

void KQuantMatMulMulti(std::span<const MatMulOutput> outs, const float* x, int64_t m,
                       ThreadPool& pool) {
  const int64_t count = static_cast<int64_t>(outs.size());
  KILN_CHECK(count >= 1 && count <= kMaxMatMulOutputs, "MatMulMulti: ", count, " outputs");
  bool any_k = false, any_q5 = false;
  for (const MatMulOutput& o : outs) {
    CheckKMatMul(*o.w, m);
    KILN_CHECK(o.w->cols == outs[0].w->cols, "MatMulMulti: weights with ", o.w->cols, " and ",
               outs[0].w->cols, " columns");
    (IsKQuant(o.w->dtype) ? any_k : any_q5) = true;
  }
  const int64_t k = outs[0].w->cols;
  // Owned by the calling thread; workers only read them during this call. Each activation type
  // is quantized once for all outputs that read it.
  thread_local KActsBuffer k_buffer;
  thread_local ActsBuffer buffer;
  const KActsView kacts = any_k ? k_buffer.Get(m, k) : KActsView{};
  const ActsView acts = any_q5 ? buffer.Get(m, k) : ActsView{};
  const auto quantize = [&](int64_t r0, int64_t r1) {
    if (any_k) {
      KActsView out = kacts;
      out.blocks = out.Row(r0);
      QuantizeActsQ8K(x + r0 * k, r1 - r0, out);
    }
    if (any_q5) QuantizeActs(x + r0 * k, r1 - r0, acts.Row(r0));
  };
  if (m >= kParallelQuantizeRows) {
    SplitRange(pool, m, 1, quantize);
  } else if (m > 0) {
    quantize(0, m);
  }
  std::array<KMatMulArgs, kMaxMatMulOutputs> args;
  std::array<int64_t, kMaxMatMulOutputs + 1> first_row{};
  for (int64_t i = 0; i < count; ++i) {
    args[i] = {outs[i].w, kacts, acts, m, outs[i].y, QGemmEnabled()};
    first_row[i + 1] = first_row[i] + outs[i].w->rows;
  }
  if (m == 0 || first_row[count] == 0) return;
  // Output rows of all weights form one range, split over the pool in one pass.
  const auto rows = HWY_DYNAMIC_DISPATCH(KMatMulRowsT);
  SplitRange(pool, first_row[count], kRowGrain, [&](int64_t n0, int64_t n1) {
    for (int64_t i = 0; i < count; ++i) {
      const int64_t lo = std::max(n0, first_row[i]), hi = std::min(n1, first_row[i + 1]);
      if (lo < hi) rows(args[i], lo - first_row[i], hi - first_row[i]);
    }
  });
}

void KQuantMatMul(const Matrix& w, const float* x, int64_t m, float* y, ThreadPool& pool) {
  const MatMulOutput out{&w, y};
  KQuantMatMulMulti({&out, 1}, x, m, pool);
}

uint64_t KQuantPackedBytes(const Matrix& w) {
  if (!QGemmEnabled() || w.rows <= 0 || w.cols <= 0) return 0;
  CheckKMatMul(w, 0);
  return HWY_DYNAMIC_DISPATCH(KPackedBytesT)(w);
}

void KQuantPack(const Matrix& w, uint8_t* dst) { HWY_DYNAMIC_DISPATCH(KPackT)(w, dst); }

bool KQuantDequantize(DType t, const uint8_t* src, int64_t n, float* dst) {
  if (!HasKQuantKernels(t)) return false;
  KILN_CHECK(n % GetDTypeInfo(t).block_elems == 0, "DequantizeRow: ", GetDTypeInfo(t).name,
             " row of ", n, " elements");
  return HWY_DYNAMIC_DISPATCH(KDequantizeT)(t, src, n, dst);
}

}  // namespace kiln::kernels
#endif  // HWY_ONCE
