// LayerNorm and GELU: the element-wise kernels of BERT-style encoders (ops.h), in f32 as
// torch's CPU kernels compute them up to the order of sums.
#include <cmath>
#include <cstdint>

#include "kernels/hwy_config.h"
#include "kernels/ops.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/encoder_ops.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "kernels/activations-inl.h"

HWY_BEFORE_NAMESPACE();
namespace kiln::kernels::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Sum of f(x[i]) over [0, n): one vector accumulator, the tail one lane at a time.
template <class F>
HWY_INLINE float SumOf(const float* x, int64_t n, const F& f) {
  const hn::ScalableTag<float> df;
  auto acc = hn::Zero(df);
  float tail = 0.0f;
  ForEachVector(n, [&](auto d, int64_t i) {
    const auto v = f(d, hn::LoadU(d, x + i));
    if constexpr (hn::MaxLanes(d) == 1) {
      tail += hn::GetLane(v);
    } else {
      acc = hn::Add(acc, v);
    }
  });
  return hn::GetLane(hn::SumOfLanes(df, acc)) + tail;
}

// Two passes (mean, then the variance of x - mean) rather than E[x^2] - mean^2: BERT's
// residual stream has large means in a few channels, where the one-pass form loses digits.
void LayerNormT(const float* x, const float* weight, const float* bias, int64_t n, float eps,
                float* out) {
  const float mean = SumOf(x, n, [](auto, auto v) { return v; }) / static_cast<float>(n);
  const float var = SumOf(x, n,
                          [&](auto d, auto v) {
                            const auto c = hn::Sub(v, hn::Set(d, mean));
                            return hn::Mul(c, c);
                          }) /
                    static_cast<float>(n);
  const float inv_std = 1.0f / std::sqrt(var + eps);
  ForEachVector(n, [&](auto d, int64_t i) {
    const auto c = hn::Mul(hn::Sub(hn::LoadU(d, x + i), hn::Set(d, mean)), hn::Set(d, inv_std));
    hn::StoreU(hn::MulAdd(c, hn::LoadU(d, weight + i), hn::LoadU(d, bias + i)), d, out + i);
  });
}

// 1 / x for x >= 1 (no zeros, no denormals): the approximate reciprocal (12 bits) and one
// Newton step (about 23 bits), a fraction of a division's latency; GELU spends one per element.
template <class D, class V>
HWY_INLINE V Reciprocal(D d, V x) {
  const auto r = hn::ApproximateReciprocal(x);
  return hn::Mul(r, hn::NegMulAdd(x, r, hn::Set(d, 2.0f)));
}

// erfc(a) for a >= 0 as t * exp(-a^2 + P(t)), t = 1 / (1 + a/2), P the degree-9 Chebyshev fit
// of Numerical Recipes' erfcc: relative error below 1.2e-7 everywhere, so erf's tail towards
// -inf (where GELU is a small difference) keeps its digits.
template <class D, class V>
HWY_INLINE V Erfc(D d, V a) {
  const auto t = Reciprocal(d, hn::MulAdd(hn::Set(d, 0.5f), a, hn::Set(d, 1.0f)));
  constexpr float kC[] = {-1.26551223f, 1.00002368f,  0.37409196f, 0.09678418f,  -0.18628806f,
                          0.27886807f,  -1.13520398f, 1.48851587f, -0.82215223f, 0.17087277f};
  auto p = hn::Set(d, kC[9]);
  for (int i = 8; i >= 0; --i) p = hn::MulAdd(p, t, hn::Set(d, kC[i]));
  // exp's argument is clamped where it underflows anyway (a > 9.3: erfc < 1e-38).
  const auto arg = hn::Max(hn::Sub(p, hn::Mul(a, a)), hn::Set(d, -87.0f));
  return hn::Mul(t, hn::Exp(d, arg));
}

// gelu(x) = x/2 (1 + erf(x / sqrt 2)); with c = erfc(|x| / sqrt 2), 1 + erf = 2 - c for
// x >= 0 and c for x < 0.
void GeluErfT(const float* x, int64_t n, float* out) {
  ForEachVector(n, [&](auto d, int64_t i) {
    const auto v = hn::LoadU(d, x + i);
    const auto c = Erfc(d, hn::Mul(hn::Abs(v), hn::Set(d, 0.70710678118654752f)));
    const auto one_plus_erf =
        hn::IfThenElse(hn::Lt(v, hn::Zero(d)), c, hn::Sub(hn::Set(d, 2.0f), c));
    hn::StoreU(hn::Mul(hn::Mul(hn::Set(d, 0.5f), v), one_plus_erf), d, out + i);
  });
}

// gelu_new / gelu_pytorch_tanh: x/2 (1 + tanh(u)), u = sqrt(2/pi) (x + 0.044715 x^3),
// computed as x / (1 + exp(-2u)) (the same function): 1 + tanh(u) cancels to 0 in f32 for
// u < -9, the sigmoid form keeps the tail's digits.
void GeluTanhT(const float* x, int64_t n, float* out) {
  ForEachVector(n, [&](auto d, int64_t i) {
    const auto v = hn::LoadU(d, x + i);
    const auto cube = hn::Mul(hn::Mul(v, v), v);
    const auto u =
        hn::Mul(hn::Set(d, 0.7978845608028654f), hn::MulAdd(hn::Set(d, 0.044715f), cube, v));
    const auto e = hn::Exp(d, hn::Min(hn::Mul(hn::Set(d, -2.0f), u), hn::Set(d, 88.0f)));
    hn::StoreU(hn::Mul(v, Reciprocal(d, hn::Add(hn::Set(d, 1.0f), e))), d, out + i);
  });
}

}  // namespace kiln::kernels::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace kiln::kernels {

HWY_EXPORT(LayerNormT);
HWY_EXPORT(GeluErfT);
HWY_EXPORT(GeluTanhT);

void LayerNorm(const float* x, const float* weight, const float* bias, int64_t n, float eps,
               float* out) {
  if (n > 0) HWY_DYNAMIC_DISPATCH(LayerNormT)(x, weight, bias, n, eps, out);
}

void Gelu(const float* x, int64_t n, GeluStyle style, float* out) {
  if (n <= 0) return;
  if (style == GeluStyle::kErf) {
    HWY_DYNAMIC_DISPATCH(GeluErfT)(x, n, out);
  } else {
    HWY_DYNAMIC_DISPATCH(GeluTanhT)(x, n, out);
  }
}

}  // namespace kiln::kernels
#endif  // HWY_ONCE
