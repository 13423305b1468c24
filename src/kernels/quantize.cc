// Dispatch for QuantizeActs, DequantizeRow and QuantizeRow's f16 / bf16 rows (the KV cache's
// writes); QuantizeRow's quantized types (writers and tests, not a hot path) are the scalar
// reference quantizers.
#include "kernels/quantize.h"

#include <new>

#include "kernels/hwy_config.h"
#include "kernels/kquant.h"
#include "kernels/scalar_ops.h"
#include "util/error.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/quantize.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "kernels/quantize-inl.h"

HWY_BEFORE_NAMESPACE();
namespace kiln::kernels::HWY_NAMESPACE {

void QuantizeActsT(const float* x, int64_t rows, const ActsView& out) {
  QuantizeActsImpl(x, rows, out);
}

bool DequantizeRowT(DType t, const uint8_t* src, int64_t n, float* dst) {
  return DequantizeRowImpl(t, src, n, dst);
}

bool NarrowRowT(DType t, const float* src, int64_t n, uint16_t* dst) {
  return NarrowRowImpl(t, src, n, dst);
}

}  // namespace kiln::kernels::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace kiln::kernels {

HWY_EXPORT(QuantizeActsT);
HWY_EXPORT(DequantizeRowT);
HWY_EXPORT(NarrowRowT);

namespace {
constexpr uint64_t kAlign = 64;
uint64_t AlignUp(uint64_t n) { return (n + kAlign - 1) / kAlign * kAlign; }
}  // namespace

void ActsBuffer::Free::operator()(uint8_t* p) const {
  ::operator delete[](p, std::align_val_t{kAlign});
}

ActsView ActsBuffer::Get(int64_t rows, int64_t k) {
  const uint64_t blocks = static_cast<uint64_t>(rows * (k / kQBlock));
  const uint64_t qs_bytes = AlignUp(static_cast<uint64_t>(rows * k));
  const uint64_t ds_bytes = AlignUp(blocks * 2 * sizeof(float));
  const uint64_t need = qs_bytes + ds_bytes + AlignUp(blocks * sizeof(int32_t));
  if (need > capacity_) {
    mem_.reset(static_cast<uint8_t*>(::operator new[](need, std::align_val_t{kAlign})));
    capacity_ = need;
  }
  uint8_t* base = mem_.get();
  return {k, reinterpret_cast<int8_t*>(base), reinterpret_cast<float*>(base + qs_bytes),
          reinterpret_cast<int32_t*>(base + qs_bytes + ds_bytes)};
}

void QuantizeActs(const float* x, int64_t rows, const ActsView& out) {
  HWY_DYNAMIC_DISPATCH(QuantizeActsT)(x, rows, out);
}

void DequantizeRow(const Matrix& w, int64_t row, float* dst) {
  KILN_CHECK(row >= 0 && row < w.rows, "DequantizeRow: row ", row, " out of [0, ", w.rows, ")");
  const DTypeInfo& info = GetDTypeInfo(w.dtype);
  KILN_CHECK(w.cols % info.block_elems == 0, "DequantizeRow: ", info.name, " row of ", w.cols,
             " elements");
  const uint8_t* src = w.data + static_cast<uint64_t>(row) * w.row_bytes;
  if (KQuantDequantize(w.dtype, src, w.cols, dst)) return;  // K-quants: kquant.h
  if (!HWY_DYNAMIC_DISPATCH(DequantizeRowT)(w.dtype, src, w.cols, dst)) {
    throw Error(StrCat("DequantizeRow for ", info.name, " is not supported yet"));
  }
}

void QuantizeRow(DType t, const float* src, int64_t n, uint8_t* dst) {
  // f16 / bf16 rows are the KV cache's writes (one per token, layer and head): SIMD where the
  // target has it; the quantized types are writers' and tests' reference quantizers.
  if ((t == DType::kF16 || t == DType::kBF16) &&
      HWY_DYNAMIC_DISPATCH(NarrowRowT)(t, src, n, reinterpret_cast<uint16_t*>(dst))) {
    return;
  }
  scalar::QuantizeRow(t, src, n, dst);
}

}  // namespace kiln::kernels
#endif  // HWY_ONCE
