// RmsNorm: out = (x * (1 / sqrt(mean(x^2) + eps))) * weight, in f32 as transformers' RMSNorm.
#include <cmath>
#include <cstdint>

#include "kernels/hwy_config.h"
#include "kernels/ops.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/norm.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace kiln::kernels::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Sum of x[i]^2 over [0, n) in f32 (two vector accumulators, scalar tail).
float SumOfSquares(const float* x, int64_t n) {
  const hn::ScalableTag<float> df;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(df));
  auto acc0 = hn::Zero(df), acc1 = hn::Zero(df);
  int64_t i = 0;
  for (; i + 2 * lanes <= n; i += 2 * lanes) {
    const auto a = hn::LoadU(df, x + i), b = hn::LoadU(df, x + i + lanes);
    acc0 = hn::MulAdd(a, a, acc0);
    acc1 = hn::MulAdd(b, b, acc1);
  }
  for (; i + lanes <= n; i += lanes) {
    const auto a = hn::LoadU(df, x + i);
    acc0 = hn::MulAdd(a, a, acc0);
  }
  float sum = hn::GetLane(hn::SumOfLanes(df, hn::Add(acc0, acc1)));
  for (; i < n; ++i) sum += x[i] * x[i];
  return sum;
}

void RmsNormT(const float* x, const float* weight, int64_t n, float eps, float* out) {
  const float inv_rms = 1.0f / std::sqrt(SumOfSquares(x, n) / static_cast<float>(n) + eps);
  const hn::ScalableTag<float> df;
  const hn::CappedTag<float, 1> d1;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(df));
  int64_t i = 0;
  for (; i + lanes <= n; i += lanes) {
    const auto v = hn::Mul(hn::LoadU(df, x + i), hn::Set(df, inv_rms));
    hn::StoreU(hn::Mul(v, hn::LoadU(df, weight + i)), df, out + i);
  }
  for (; i < n; ++i) {
    const auto v = hn::Mul(hn::LoadU(d1, x + i), hn::Set(d1, inv_rms));
    hn::StoreU(hn::Mul(v, hn::LoadU(d1, weight + i)), d1, out + i);
  }
}

}  // namespace kiln::kernels::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace kiln::kernels {

HWY_EXPORT(RmsNormT);

void RmsNorm(const float* x, const float* weight, int64_t n, float eps, float* out) {
  if (n > 0) HWY_DYNAMIC_DISPATCH(RmsNormT)(x, weight, n, eps, out);
}

}  // namespace kiln::kernels
#endif  // HWY_ONCE
