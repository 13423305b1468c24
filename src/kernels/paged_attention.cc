// Highway implementation of PagedAttention, one dispatch per call.
#include "kernels/paged_attention.h"

#include <cmath>
#include <cstring>
#include <type_traits>
#include <vector>

#include "util/error.h"
#include "util/half.h"

// clang-format off
#include "kernels/hwy_config.h"  // before any hwy header: all kernel TUs share one target set
// clang-format on
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/paged_attention.cc"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

HWY_BEFORE_NAMESPACE();
namespace kiln::kernels {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// n elements of K/V at p widened to f32 (bf16 -> f32 is exact).
template <typename T, class D>
HWY_INLINE hn::Vec<D> LoadF32(D d, const T* p) {
  if constexpr (std::is_same_v<T, float>) {
    return hn::LoadU(d, p);
  } else {
    return hn::PromoteTo(d, hn::LoadU(hn::Rebind<T, D>(), p));
  }
}

template <typename T>
HWY_INLINE float ToF32(const T* p) {
  if constexpr (std::is_same_v<T, float>) {
    return *p;
  } else {
    uint16_t bits;
    std::memcpy(&bits, p, 2);
    return Bf16ToF32(bits);
  }
}

// dot(a [n] f32, b [n] of T)
template <typename T>
float Dot(const float* a, const T* b, int n) {
  const hn::ScalableTag<float> d;
  const int lanes = static_cast<int>(hn::Lanes(d));
  auto acc0 = hn::Zero(d), acc1 = hn::Zero(d);
  int i = 0;
  for (; i + 2 * lanes <= n; i += 2 * lanes) {
    acc0 = hn::MulAdd(hn::LoadU(d, a + i), LoadF32(d, b + i), acc0);
    acc1 = hn::MulAdd(hn::LoadU(d, a + i + lanes), LoadF32(d, b + i + lanes), acc1);
  }
  for (; i + lanes <= n; i += lanes)
    acc0 = hn::MulAdd(hn::LoadU(d, a + i), LoadF32(d, b + i), acc0);
  float sum = hn::GetLane(hn::SumOfLanes(d, hn::Add(acc0, acc1)));
  for (; i < n; ++i) sum += a[i] * ToF32(b + i);
  return sum;
}

// y[0, n) += w * x[0, n), x of T
template <typename T>
void Axpy(float w, const T* x, float* y, int n) {
  const hn::ScalableTag<float> d;
  const int lanes = static_cast<int>(hn::Lanes(d));
  const auto vw = hn::Set(d, w);
  int i = 0;
  for (; i + lanes <= n; i += lanes) {
    hn::StoreU(hn::MulAdd(vw, LoadF32(d, x + i), hn::LoadU(d, y + i)), d, y + i);
  }
  for (; i < n; ++i) y[i] += w * ToF32(x + i);
}

// One (token, head): scores over positions 0..last, softmax, weighted sum of V.
template <typename T>
void AttendOne(const float* q, int64_t last, const PagedKv& kv, int64_t kv_offset, int head_dim,
               float scale, int64_t kv_dim, std::vector<float>& scores, float* out) {
  const T* k_base = static_cast<const T*>(kv.k_base);
  const T* v_base = static_cast<const T*>(kv.v_base);
  scores.resize(last + 1);
  float max_score = -INFINITY;
  for (int64_t p = 0; p <= last; ++p) {
    const int64_t row = kv.block_table[p / kv.block_size] * kv.block_stride +
                        (p % kv.block_size) * kv_dim + kv_offset;
    scores[p] = Dot(q, k_base + row, head_dim) * scale;
    max_score = std::max(max_score, scores[p]);
  }
  float sum = 0.0f;
  for (int64_t p = 0; p <= last; ++p) {
    scores[p] = std::exp(scores[p] - max_score);
    sum += scores[p];
  }
  const float inv = 1.0f / sum;
  std::fill(out, out + head_dim, 0.0f);
  for (int64_t p = 0; p <= last; ++p) {
    const int64_t row = kv.block_table[p / kv.block_size] * kv.block_stride +
                        (p % kv.block_size) * kv_dim + kv_offset;
    Axpy(scores[p] * inv, v_base + row, out, head_dim);
  }
}

template <typename T>
void AttendRange(const float* q, const int64_t* pos, const PagedKv& kv, const AttentionShape& s,
                 float* out, int64_t begin, int64_t end) {
  thread_local std::vector<float> scores;
  const int64_t kv_dim = static_cast<int64_t>(s.n_kv_heads) * s.head_dim;
  const int group = s.n_heads / s.n_kv_heads;
  for (int64_t task = begin; task < end; ++task) {
    const int64_t t = task / s.n_heads;
    const int h = static_cast<int>(task % s.n_heads);
    const int64_t qo = (t * s.n_heads + h) * s.head_dim;
    AttendOne<T>(q + qo, pos[t], kv, static_cast<int64_t>(h / group) * s.head_dim, s.head_dim,
                 s.scale, kv_dim, scores, out + qo);
  }
}

void PagedAttentionRange(const float* q, const int64_t* pos, const PagedKv& kv,
                         const AttentionShape& s, float* out, int64_t begin, int64_t end) {
  if (kv.dtype == DType::kBF16) {
    AttendRange<hwy::bfloat16_t>(q, pos, kv, s, out, begin, end);
  } else {
    AttendRange<float>(q, pos, kv, s, out, begin, end);
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace kiln::kernels
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace kiln::kernels {

HWY_EXPORT(PagedAttentionRange);

void PagedAttention(const float* q, const int64_t* pos, int64_t n_tokens, const PagedKv& kv,
                    const AttentionShape& shape, float* out, ThreadPool& pool) {
  KILN_CHECK(kv.dtype == DType::kF32 || kv.dtype == DType::kBF16,
             "PagedAttention: KV elements must be f32 or bf16");
  pool.ParallelFor(n_tokens * shape.n_heads, 1, [&](int64_t begin, int64_t end) {
    HWY_DYNAMIC_DISPATCH(PagedAttentionRange)(q, pos, kv, shape, out, begin, end);
  });
}

namespace scalar {
namespace {

// Element `i` of a K/V pool of `dtype`, as f32.
float KvAt(const void* base, DType dtype, int64_t i) {
  if (dtype == DType::kBF16) return Bf16ToF32(static_cast<const uint16_t*>(base)[i]);
  return static_cast<const float*>(base)[i];
}

}  // namespace

void PagedAttention(const float* q, const int64_t* pos, int64_t n_tokens, const PagedKv& kv,
                    const AttentionShape& s, float* out) {
  const int64_t kv_dim = static_cast<int64_t>(s.n_kv_heads) * s.head_dim;
  const int group = s.n_heads / s.n_kv_heads;
  std::vector<double> w;
  for (int64_t t = 0; t < n_tokens; ++t) {
    for (int h = 0; h < s.n_heads; ++h) {
      const float* qh = q + (t * s.n_heads + h) * s.head_dim;
      float* oh = out + (t * s.n_heads + h) * s.head_dim;
      const int64_t off = static_cast<int64_t>(h / group) * s.head_dim;
      auto row = [&](int64_t p) {
        return kv.block_table[p / kv.block_size] * kv.block_stride + (p % kv.block_size) * kv_dim +
               off;
      };
      w.assign(pos[t] + 1, 0.0);
      double mx = -INFINITY, sum = 0;
      for (int64_t p = 0; p <= pos[t]; ++p) {
        double dot = 0;
        for (int i = 0; i < s.head_dim; ++i)
          dot += double{qh[i]} * KvAt(kv.k_base, kv.dtype, row(p) + i);
        w[p] = dot * s.scale;
        mx = std::max(mx, w[p]);
      }
      for (double& x : w) sum += (x = std::exp(x - mx));
      for (int i = 0; i < s.head_dim; ++i) {
        double acc = 0;
        for (int64_t p = 0; p <= pos[t]; ++p) acc += w[p] * KvAt(kv.v_base, kv.dtype, row(p) + i);
        oh[i] = static_cast<float>(acc / sum);
      }
    }
  }
}

}  // namespace scalar
}  // namespace kiln::kernels
#endif  // HWY_ONCE
