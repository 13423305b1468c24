// Per-target PagedAttention work item: all query heads of one kv head for a block of query
// tokens of one sequence, with an online (streaming) softmax over blocks of kKeyBlock keys so
// that each K/V row is read from memory once per task, not once per query head.
//
// Batch invariance: every query row (token, head) runs exactly the same floating-point ops in
// the same order whatever the other rows of its task are: key blocks start at positions
// 0, kKeyBlock, 2 * kKeyBlock, ... for everyone, and a row only ever touches keys 0..pos of its
// own token (a row stops inside the block that holds its last key). Rows sharing a task only
// share the K/V rows read, never arithmetic.
// Re-included once per Highway target (toggle guard below).
#ifndef KILN_KERNELS_PAGED_ATTENTION_TASK_
#define KILN_KERNELS_PAGED_ATTENTION_TASK_
#include <cstdint>

namespace kiln::kernels::attn {

// Keys per online-softmax step: scores, max and weights of a step stay in one small array.
inline constexpr int kKeyBlock = 16;

// Query tokens [token_begin, token_end) of q / pos / out (one sequence) x the n_heads / n_kv_heads
// query heads of kv head `kv_head`.
struct Task {
  const int32_t* block_table;
  int64_t token_begin, token_end;
  int32_t kv_head;
};

}  // namespace kiln::kernels::attn
#endif  // KILN_KERNELS_PAGED_ATTENTION_TASK_

#if defined(KILN_KERNELS_PAGED_ATTENTION_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef KILN_KERNELS_PAGED_ATTENTION_INL_H_
#undef KILN_KERNELS_PAGED_ATTENTION_INL_H_
#else
#define KILN_KERNELS_PAGED_ATTENTION_INL_H_
#endif

#include <algorithm>
#include <cmath>
#include <cstring>
#include <type_traits>
#include <vector>

#include "hwy/contrib/math/math-inl.h"
#include "hwy/highway.h"
#include "kernels/fdot-inl.h"
#include "kernels/paged_attention.h"
#include "util/half.h"

HWY_BEFORE_NAMESPACE();
namespace kiln::kernels::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;
using attn::kKeyBlock;

// K/V elements (float or hwy::bfloat16_t) are widened to f32 by fdot-inl.h's LoadWeights
// (Lanes(d) of them) and WeightToF32 (one); bf16 -> f32 is exact.

#if HWY_TARGET == HWY_SCALAR
template <class D>
HWY_INLINE hn::Vec<D> SumLanesOfEach(D, hn::Vec<D>* acc) {
  return acc[0];
}
#elif !HWY_HAVE_SCALABLE
// Lane j of the result = sum of the lanes of acc[j], j < N = Lanes(d) in {4, 8, 16}: 128-bit
// interleaves, then halves, then blocks, ~3 ops per key instead of a SumOfLanes each. Every
// key's sum is the same fixed tree over its own lanes, whatever the other keys hold.
template <class D>
HWY_INLINE hn::Vec<D> SumLanesOfEach(D d, hn::Vec<D>* acc) {
  constexpr size_t N = hn::MaxLanes(D());
  const hn::Repartition<uint64_t, D> du;
  hn::Vec<D> t[N / 2], u[N / 4];
  for (size_t i = 0; i < N / 2; ++i) {  // per block [a0+a2, b0+b2, a1+a3, b1+b3]
    t[i] = hn::Add(hn::InterleaveLower(d, acc[2 * i], acc[2 * i + 1]),
                   hn::InterleaveUpper(d, acc[2 * i], acc[2 * i + 1]));
  }
  for (size_t i = 0; i < N / 4; ++i) {  // per block: keys 4i..4i+3, this block's lanes summed
    const auto x = hn::BitCast(du, t[2 * i]), y = hn::BitCast(du, t[2 * i + 1]);
    u[i] = hn::Add(hn::BitCast(d, hn::InterleaveLower(du, x, y)),
                   hn::BitCast(d, hn::InterleaveUpper(du, x, y)));
  }
  if constexpr (N == 4) {
    return u[0];
  } else if constexpr (N == 8) {  // [u0 block 0 + block 1, u1 block 0 + block 1]
    return hn::Add(hn::ConcatLowerLower(d, u[1], u[0]), hn::ConcatUpperUpper(d, u[1], u[0]));
  } else {
    static_assert(N == 16, "key groups are 4, 8 or 16 lanes");
    // v0 blocks [u0 B0+B2, u0 B1+B3, u2 B0+B2, u2 B1+B3], v1 likewise for u1, u3.
    const auto v0 =
        hn::Add(hn::ConcatLowerLower(d, u[2], u[0]), hn::ConcatUpperUpper(d, u[2], u[0]));
    const auto v1 =
        hn::Add(hn::ConcatLowerLower(d, u[3], u[1]), hn::ConcatUpperUpper(d, u[3], u[1]));
    // [v0 B0 + v0 B1, v1 B1 + v1 B0, v0 B2 + v0 B3, v1 B3 + v1 B2] = [u0, u1, u2, u3]
    return hn::Add(hn::OddEvenBlocks(v1, v0), hn::SwapAdjacentBlocks(hn::OddEvenBlocks(v0, v1)));
  }
}
#endif  // HWY_TARGET == HWY_SCALAR

#if !HWY_HAVE_SCALABLE
// acc[j] += q . K_j over dim = kVecs * N, N = Lanes(d) keys (k [N]), with q held in registers
// and each key's address loaded once: the same FMAs in the same order as Scores' generic loop.
template <int kVecs, typename T, class D>
HWY_INLINE void DotsQInRegisters(D d, const float* q, const T* const* k, hn::Vec<D>* acc) {
  constexpr int N = static_cast<int>(hn::MaxLanes(D()));
  hn::Vec<D> qv[kVecs];
  for (int v = 0; v < kVecs; ++v) qv[v] = hn::LoadU(d, q + v * N);
#pragma GCC unroll 16
  for (int j = 0; j < N; ++j) {
    const T* kj = k[j];
    auto a = acc[j];
    for (int v = 0; v < kVecs; ++v) a = hn::MulAdd(qv[v], LoadWeights(d, kj + v * N), a);
    acc[j] = a;
  }
}
#endif

// w[j] = scale * dot(q, K_j), j < kKeyBlock, for one row; keys j >= valid get garbage (masked
// by the caller). Keys go N = Lanes(d) at a time: N accumulators over the dims, one tree each.
template <typename T, class D>
HWY_INLINE void Scores(D d, const float* q, const T* const* kp, int valid, int dim, float scale,
                       float* w) {
#if HWY_HAVE_SCALABLE  // no arrays of sizeless vectors: one SumOfLanes per key
  for (int j = 0; j < valid; ++j) {
    auto acc = hn::Zero(d);
    int i = 0;
    for (; i + static_cast<int>(hn::Lanes(d)) <= dim; i += static_cast<int>(hn::Lanes(d))) {
      acc = hn::MulAdd(hn::LoadU(d, q + i), LoadWeights(d, kp[j] + i), acc);
    }
    float sum = hn::GetLane(hn::SumOfLanes(d, acc));
    for (; i < dim; ++i) sum += q[i] * WeightToF32(kp[j] + i);
    w[j] = sum * scale;
  }
#else
  constexpr int N = static_cast<int>(hn::MaxLanes(D()));
  const int full = dim / N * N;
  for (int g0 = 0; g0 < valid; g0 += N) {
    const T* k[N];
    for (int j = 0; j < N; ++j) k[j] = g0 + j < valid ? kp[g0 + j] : kp[0];  // valid >= 1
    hn::Vec<D> acc[N];
    for (int j = 0; j < N; ++j) acc[j] = hn::Zero(d);
    if (dim == 4 * N) {
      DotsQInRegisters<4>(d, q, k, acc);
    } else if (dim == 8 * N && N >= 16) {  // 8 q + 16 accumulators fit AVX-512's 32 registers
      DotsQInRegisters<8>(d, q, k, acc);
    } else {
      for (int i = 0; i < full; i += N) {
        const auto qv = hn::LoadU(d, q + i);
#pragma GCC unroll 16
        for (int j = 0; j < N; ++j) acc[j] = hn::MulAdd(qv, LoadWeights(d, k[j] + i), acc[j]);
      }
    }
    hn::StoreU(SumLanesOfEach(d, acc), d, w + g0);
    for (int j = 0; full < dim && j < N; ++j) {
      float tail = 0.0f;
      for (int i = full; i < dim; ++i) tail += q[i] * WeightToF32(k[j] + i);
      w[g0 + j] += tail;
    }
    hn::StoreU(hn::Mul(hn::LoadU(d, w + g0), hn::Set(d, scale)), d, w + g0);
  }
#endif
}

// One row's online-softmax step over keys [0, valid) of a key block (kp [valid] point at the K
// rows): w [kKeyBlock] gets the weights exp(s_j - m_new) (0 for j >= valid, never computed from
// stale cache rows), *m the new running max, lsum [Lanes(d)] the rescaled running sums; returns
// c = exp(m_old - m_new), the factor for the row's output accumulator (exactly 1 when the max
// holds).
template <typename T, class D>
HWY_NOINLINE float SoftmaxStep(D d, const float* q, const T* const* kp, int valid, int dim,
                               float scale, bool first, float* m, float* lsum, float* w) {
  const int lanes = static_cast<int>(hn::Lanes(d));
  Scores(d, q, kp, valid, dim, scale, w);
  auto vmax = hn::Set(d, -INFINITY);
  for (int j = 0; j < valid; j += lanes) {
    const auto mask = hn::FirstN(d, static_cast<size_t>(valid - j));
    vmax = hn::Max(vmax, hn::IfThenElse(mask, hn::LoadU(d, w + j), hn::Set(d, -INFINITY)));
  }
  const float bmax = hn::GetLane(hn::MaxOfLanes(d, vmax));
  const float m_old = *m;
  const float m_new = first ? bmax : std::max(m_old, bmax);
  for (int j = valid; j < kKeyBlock; ++j) w[j] = m_new;  // masked below
  *m = m_new;
  float c = 1.0f;
  if (!first && m_new != m_old) c = hn::GetLane(hn::Exp(d, hn::Set(d, m_old - m_new)));
  auto l = hn::LoadU(d, lsum);
  if (c != 1.0f) l = hn::Mul(l, hn::Set(d, c));
  const auto vm = hn::Set(d, m_new);
  for (int j = 0; j < kKeyBlock; j += lanes) {
    const auto mask = hn::FirstN(d, static_cast<size_t>(std::max(0, valid - j)));
    const auto p = hn::IfThenElseZero(mask, hn::Exp(d, hn::Sub(hn::LoadU(d, w + j), vm)));
    hn::StoreU(p, d, w + j);
    l = hn::Add(l, p);
  }
  hn::StoreU(l, d, lsum);
  return c;
}

// acc_r [dim] = acc_r * c_r + sum_{j < valid} w_r[j] V_j for kRows (1 or 2) rows of one token,
// sharing the V loads and giving 4 * kRows independent FMA chains. Each element's chain runs
// over j ascending, the same ops whether its row is paired or not.
template <int kRows, typename T, class D>
HWY_NOINLINE void AccumulateV(D d, const T* const* vp, int valid, int dim, const float* w0,
                              const float* w1, float c0, float c1, float* acc0, float* acc1) {
  const int lanes = static_cast<int>(hn::Lanes(d));
  const auto vc0 = hn::Set(d, c0), vc1 = hn::Set(d, c1);
  const bool rescale0 = c0 != 1.0f, rescale1 = kRows == 2 && c1 != 1.0f;
  int i = 0;
  for (; i + 4 * lanes <= dim; i += 4 * lanes) {
    auto a0 = hn::LoadU(d, acc0 + i), a1 = hn::LoadU(d, acc0 + i + lanes);
    auto a2 = hn::LoadU(d, acc0 + i + 2 * lanes), a3 = hn::LoadU(d, acc0 + i + 3 * lanes);
    auto b0 = a0, b1 = a1, b2 = a2, b3 = a3;
    if (rescale0) {
      a0 = hn::Mul(a0, vc0), a1 = hn::Mul(a1, vc0), a2 = hn::Mul(a2, vc0), a3 = hn::Mul(a3, vc0);
    }
    if constexpr (kRows == 2) {
      b0 = hn::LoadU(d, acc1 + i), b1 = hn::LoadU(d, acc1 + i + lanes);
      b2 = hn::LoadU(d, acc1 + i + 2 * lanes), b3 = hn::LoadU(d, acc1 + i + 3 * lanes);
      if (rescale1) {
        b0 = hn::Mul(b0, vc1), b1 = hn::Mul(b1, vc1), b2 = hn::Mul(b2, vc1), b3 = hn::Mul(b3, vc1);
      }
    }
    for (int j = 0; j < valid; ++j) {
      const T* v = vp[j] + i;
      const auto v0 = LoadWeights(d, v), v1 = LoadWeights(d, v + lanes);
      const auto v2 = LoadWeights(d, v + 2 * lanes), v3 = LoadWeights(d, v + 3 * lanes);
      const auto x = hn::Set(d, w0[j]);
      a0 = hn::MulAdd(x, v0, a0), a1 = hn::MulAdd(x, v1, a1);
      a2 = hn::MulAdd(x, v2, a2), a3 = hn::MulAdd(x, v3, a3);
      if constexpr (kRows == 2) {
        const auto y = hn::Set(d, w1[j]);
        b0 = hn::MulAdd(y, v0, b0), b1 = hn::MulAdd(y, v1, b1);
        b2 = hn::MulAdd(y, v2, b2), b3 = hn::MulAdd(y, v3, b3);
      }
    }
    hn::StoreU(a0, d, acc0 + i), hn::StoreU(a1, d, acc0 + i + lanes);
    hn::StoreU(a2, d, acc0 + i + 2 * lanes), hn::StoreU(a3, d, acc0 + i + 3 * lanes);
    if constexpr (kRows == 2) {
      hn::StoreU(b0, d, acc1 + i), hn::StoreU(b1, d, acc1 + i + lanes);
      hn::StoreU(b2, d, acc1 + i + 2 * lanes), hn::StoreU(b3, d, acc1 + i + 3 * lanes);
    }
  }
  for (; i + lanes <= dim; i += lanes) {
    auto a = hn::LoadU(d, acc0 + i);
    if (rescale0) a = hn::Mul(a, vc0);
    auto b = a;
    if constexpr (kRows == 2) {
      b = hn::LoadU(d, acc1 + i);
      if (rescale1) b = hn::Mul(b, vc1);
    }
    for (int j = 0; j < valid; ++j) {
      const auto v = LoadWeights(d, vp[j] + i);
      a = hn::MulAdd(hn::Set(d, w0[j]), v, a);
      if constexpr (kRows == 2) b = hn::MulAdd(hn::Set(d, w1[j]), v, b);
    }
    hn::StoreU(a, d, acc0 + i);
    if constexpr (kRows == 2) hn::StoreU(b, d, acc1 + i);
  }
  for (; i < dim; ++i) {
    for (int r = 0; r < kRows; ++r) {
      const float* w = r ? w1 : w0;
      float* acc = r ? acc1 : acc0;
      const float c = r ? c1 : c0;
      float a = c != 1.0f ? acc[i] * c : acc[i];
      for (int j = 0; j < valid; ++j) a += w[j] * WeightToF32(vp[j] + i);
      acc[i] = a;
    }
  }
}

// One key block (positions p0 .. p0 + kKeyBlock - 1, rows kp / vp) for every row of the task
// that reaches it: the online-softmax step, then the V accumulation with rows paired.
template <typename T, class D>
HWY_INLINE void AttendBlock(D d, const float* q, const int64_t* pos, const AttentionShape& s,
                            const attn::Task& task, int64_t p0, const T* const* kp,
                            const T* const* vp, float* m, float* lsum, float* w, float* c,
                            float* acc) {
  const int lanes = static_cast<int>(hn::Lanes(d));
  const int dim = s.head_dim, group = s.n_heads / s.n_kv_heads;
  const int64_t head0 = static_cast<int64_t>(task.kv_head) * group;  // the task's first head
  for (int64_t t = 0; t < task.token_end - task.token_begin; ++t) {
    const int64_t pt = pos[task.token_begin + t];
    if (pt < p0) continue;
    const int valid = static_cast<int>(std::min<int64_t>(kKeyBlock, pt + 1 - p0));
    const int64_t r0 = t * group;  // this token's rows r0 .. r0 + group - 1
    const float* qt = q + ((task.token_begin + t) * s.n_heads + head0) * dim;
    for (int g = 0; g < group; ++g) {
      c[g] = SoftmaxStep(d, qt + g * dim, kp, valid, dim, s.scale, p0 == 0, &m[r0 + g],
                         &lsum[(r0 + g) * lanes], &w[g * kKeyBlock]);
    }
    for (int g = 0; g < group; g += 2) {
      float* a = &acc[(r0 + g) * dim];
      if (g + 1 < group) {
        AccumulateV<2>(d, vp, valid, dim, &w[g * kKeyBlock], &w[(g + 1) * kKeyBlock], c[g],
                       c[g + 1], a, a + dim);
      } else {
        AccumulateV<1>(d, vp, valid, dim, &w[g * kKeyBlock], nullptr, c[g], 1.0f, a, nullptr);
      }
    }
  }
}

// dst [n, dim] = rows src[0 .. n) widened to f32 (exact for f16 / bf16), kp[j] = dst + j * dim.
template <typename T, class D>
HWY_INLINE void WidenRows(D d, const T* const* src, int n, int dim, float* dst, const float** kp) {
  const int lanes = static_cast<int>(hn::Lanes(d));
  for (int j = 0; j < n; ++j) {
    float* row = dst + j * dim;
    int i = 0;
    for (; i + lanes <= dim; i += lanes) hn::StoreU(LoadWeights(d, src[j] + i), d, row + i);
    for (; i < dim; ++i) row[i] = WeightToF32(src[j] + i);
    kp[j] = row;
  }
}

// Runs one task: rows r = (t - token_begin) * group + g for query head kv_head * group + g.
template <typename T>
void AttendTask(const float* q, const int64_t* pos, const PagedKv& kv, const AttentionShape& s,
                const attn::Task& task, float* out) {
  const hn::CappedTag<float, kKeyBlock> d;  // a key block is a whole number of vectors
  const int lanes = static_cast<int>(hn::Lanes(d));
  const int dim = s.head_dim, group = s.n_heads / s.n_kv_heads;
  const int64_t kv_dim = static_cast<int64_t>(s.n_kv_heads) * dim;
  const int64_t n_tok = task.token_end - task.token_begin;
  const int64_t rows = n_tok * group;
  // Per-thread scratch, grown to the largest task seen: acc [rows, dim], lsum [rows, lanes],
  // m [rows]; one token's weights w [group, kKeyBlock] and factors c [group].
  // kf, vf [kKeyBlock, dim]: the current key block widened to f32 (f16 / bf16 K/V only).
  thread_local std::vector<float> acc, lsum, m, w, c, kf, vf;
  acc.assign(rows * dim, 0.0f);
  lsum.assign(rows * lanes, 0.0f);
  m.assign(rows, -INFINITY);
  w.resize(group * kKeyBlock);
  c.resize(group);
  int64_t last = 0;
  for (int64_t t = task.token_begin; t < task.token_end; ++t) last = std::max(last, pos[t]);

  const T* k_base = static_cast<const T*>(kv.k_base);
  const T* v_base = static_cast<const T*>(kv.v_base);
  const int64_t head_off = static_cast<int64_t>(task.kv_head) * dim;
  const T* kp[kKeyBlock];
  const T* vp[kKeyBlock];
  // Prefill tasks (several query tokens) with f16 / bf16 K/V read each key block widened to f32
  // once (kf / vf, rows kw / vw) rather than converting it again for every row: the same values,
  // so the same results. Decode rows (one token: 1 to 8 rows per key block) convert on the fly:
  // widening first measured no faster there, and slower for 3 or 4 rows (bench/attention_bench).
  // Only for head_dim a multiple of the vector: the scalar tail loops of Scores / AccumulateV
  // may be contracted into FMAs differently for float and for half rows, so a widened prefill
  // row could differ in its last bits from the same row decoded alone (batch invariance).
  const bool widen = !std::is_same_v<T, float> && n_tok > 1 && dim % lanes == 0;
  if (widen) {
    kf.resize(kKeyBlock * dim);
    vf.resize(kKeyBlock * dim);
  }
  const float* kw[kKeyBlock];
  const float* vw[kKeyBlock];
  for (int64_t p0 = 0; p0 <= last; p0 += kKeyBlock) {
    const int nk = static_cast<int>(std::min<int64_t>(kKeyBlock, last + 1 - p0));
    for (int j = 0; j < nk; ++j) {
      const int64_t p = p0 + j;
      const int64_t row = task.block_table[p / kv.block_size] * kv.block_stride +
                          (p % kv.block_size) * kv_dim + head_off;
      kp[j] = k_base + row;
      vp[j] = v_base + row;
    }
    if (widen) {
      WidenRows(d, kp, nk, dim, kf.data(), kw);
      WidenRows(d, vp, nk, dim, vf.data(), vw);
      AttendBlock(d, q, pos, s, task, p0, kw, vw, m.data(), lsum.data(), w.data(), c.data(),
                  acc.data());
    } else {
      AttendBlock(d, q, pos, s, task, p0, kp, vp, m.data(), lsum.data(), w.data(), c.data(),
                  acc.data());
    }
  }

  for (int64_t t = 0; t < n_tok; ++t) {
    for (int g = 0; g < group; ++g) {
      const int64_t r = t * group + g;
      const int64_t head = static_cast<int64_t>(task.kv_head) * group + g;
      float* o = out + ((task.token_begin + t) * s.n_heads + head) * dim;
      const float* a = &acc[r * dim];
      const float inv = 1.0f / hn::GetLane(hn::SumOfLanes(d, hn::LoadU(d, &lsum[r * lanes])));
      const auto vinv = hn::Set(d, inv);
      int i = 0;
      for (; i + lanes <= dim; i += lanes) hn::StoreU(hn::Mul(hn::LoadU(d, a + i), vinv), d, o + i);
      for (; i < dim; ++i) o[i] = a[i] * inv;
    }
  }
}

}  // namespace kiln::kernels::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // KILN_KERNELS_PAGED_ATTENTION_INL_H_
