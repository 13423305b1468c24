// Dispatch for the element-wise kernels (activations-inl.h) and ActiveTargetName.
#include <algorithm>
#include <cstdint>
#include <limits>

#include "kernels/hwy_config.h"
#include "kernels/ops.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/activations.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "kernels/activations-inl.h"

HWY_BEFORE_NAMESPACE();
namespace kiln::kernels::HWY_NAMESPACE {

void SiluMulT(const float* gate, const float* up, int64_t n, float* out) {
  SiluMulImpl(gate, up, n, out);
}
void AddInPlaceT(float* y, const float* x, int64_t n) { AddInPlaceImpl(y, x, n); }
void SoftmaxT(float* x, int64_t n) { SoftmaxImpl(x, n); }
int64_t ArgMaxT(const float* x, int64_t n) { return ArgMaxImpl(x, n); }
const char* TargetNameT() { return hwy::TargetName(HWY_TARGET); }

}  // namespace kiln::kernels::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace kiln::kernels {

HWY_EXPORT(SiluMulT);
HWY_EXPORT(AddInPlaceT);
HWY_EXPORT(SoftmaxT);
HWY_EXPORT(ArgMaxT);
HWY_EXPORT(TargetNameT);

void SiluMul(const float* gate, const float* up, int64_t n, float* out) {
  HWY_DYNAMIC_DISPATCH(SiluMulT)(gate, up, n, out);
}
void AddInPlace(float* y, const float* x, int64_t n) { HWY_DYNAMIC_DISPATCH(AddInPlaceT)(y, x, n); }
void Softmax(float* x, int64_t n) {
  if (n > 0) HWY_DYNAMIC_DISPATCH(SoftmaxT)(x, n);
}
int64_t ArgMax(const float* x, int64_t n) {
  return n > 0 ? HWY_DYNAMIC_DISPATCH(ArgMaxT)(x, n) : 0;
}
const char* ActiveTargetName() { return HWY_DYNAMIC_DISPATCH(TargetNameT)(); }

}  // namespace kiln::kernels
#endif  // HWY_ONCE
