// Per-target attention scores of one block of keys: w = scale * q . K for one query row, or for
// several rows of one token (the query heads of a GQA kv head) sharing every key load. Used by
// paged_attention-inl.h. Every score is one fixed sequence of FMAs over the dims, ascending,
// summed by one fixed tree, whatever rows share the call (batch invariance).
// Re-included once per Highway target (toggle guard below).
#if defined(KILN_KERNELS_ATTENTION_SCORES_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef KILN_KERNELS_ATTENTION_SCORES_INL_H_
#undef KILN_KERNELS_ATTENTION_SCORES_INL_H_
#else
#define KILN_KERNELS_ATTENTION_SCORES_INL_H_
#endif

#include <algorithm>

#include "hwy/highway.h"
#include "kernels/fdot-inl.h"

HWY_BEFORE_NAMESPACE();
namespace kiln::kernels::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

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

// Vector registers of the target: the query rows that share each loaded (and widened) K / V
// vector are as many as fit beside it.
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX3
inline constexpr int kVectorRegisters = 32;
#else
inline constexpr int kVectorRegisters = 16;
#endif
inline constexpr int kMaxSharedRows = 4;

// Rows whose scores can share each key's kVecs vectors: kRows * kVecs query vectors, kVecs key
// vectors and kRows accumulators in registers.
constexpr int SharedScoreRows(int vecs) {
  return std::min(kMaxSharedRows, (kVectorRegisters - vecs) / (vecs + 1));
}

#if !HWY_HAVE_SCALABLE
// w_r[j] = scale * q_r . K_j, j < N = Lanes(d) keys (k [N]), for kRows query rows of one token
// (q_r [kVecs * N] = the head dim), q held in registers: each key vector is loaded and widened
// once for all the rows (GQA heads sharing a kv head), not once per row. Per (row, key) the FMAs
// run over the dims in ascending order, as in Scores, and the sums take SumLanesOfEach's tree, so
// every score has the bits of its row scored alone.
template <int kVecs, int kRows, typename T, class D>
HWY_NOINLINE void ScoreRowsQInRegisters(D d, const float* q, int q_stride, const T* const* k,
                                        float scale, float* w, int w_stride) {
  constexpr int N = static_cast<int>(hn::MaxLanes(D()));
  hn::Vec<D> qv[kRows][kVecs];
  for (int r = 0; r < kRows; ++r) {
    for (int v = 0; v < kVecs; ++v) qv[r][v] = hn::LoadU(d, q + r * q_stride + v * N);
  }
  hn::Vec<D> acc[kRows][N];
#pragma GCC unroll 16
  for (int j = 0; j < N; ++j) {
    hn::Vec<D> kj[kVecs];
    for (int v = 0; v < kVecs; ++v) kj[v] = LoadWeights(d, k[j] + v * N);
    for (int r = 0; r < kRows; ++r) {
      auto a = hn::Zero(d);
      for (int v = 0; v < kVecs; ++v) a = hn::MulAdd(qv[r][v], kj[v], a);
      acc[r][j] = a;
    }
  }
  const auto vscale = hn::Set(d, scale);
  for (int r = 0; r < kRows; ++r) {
    hn::StoreU(hn::Mul(SumLanesOfEach(d, acc[r]), vscale), d, w + r * w_stride);
  }
}

// ScoreRowsQInRegisters for SharedScoreRows(kVecs) (>= 1) rows at a time over `rows` rows.
template <int kVecs, typename T, class D>
HWY_INLINE void ScoreRowsShared(D d, const float* q, int dim, const T* const* k, float scale,
                                int rows, float* w, int w_stride) {
  constexpr int kRows = SharedScoreRows(kVecs);
  int r = 0;
  for (; r + kRows <= rows; r += kRows) {
    ScoreRowsQInRegisters<kVecs, kRows>(d, q + r * dim, dim, k, scale, w + r * w_stride, w_stride);
  }
  const int left = rows - r;
  q += r * dim;
  w += r * w_stride;
  if constexpr (kRows > 3) {
    if (left == 3) return ScoreRowsQInRegisters<kVecs, 3>(d, q, dim, k, scale, w, w_stride);
  }
  if constexpr (kRows > 2) {
    if (left == 2) return ScoreRowsQInRegisters<kVecs, 2>(d, q, dim, k, scale, w, w_stride);
  }
  if (left == 1) ScoreRowsQInRegisters<kVecs, 1>(d, q, dim, k, scale, w, w_stride);
}
#endif

// w[j] = scale * dot(q, K_j), j < valid (rounded up to whole vectors), for one row; keys
// j >= valid get garbage (masked by the caller). Keys go N = Lanes(d) at a time: N accumulators
// over the dims, one tree each.
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
    for (int i = 0; i < full; i += N) {
      const auto qv = hn::LoadU(d, q + i);
#pragma GCC unroll 16
      for (int j = 0; j < N; ++j) acc[j] = hn::MulAdd(qv, LoadWeights(d, k[j] + i), acc[j]);
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

// w[r * w_stride + j] = scale * q_r . K_j for `rows` query rows of one token (q [rows, dim])
// and keys j < valid of a key block (kp [valid]); keys j >= valid get garbage (masked by the
// caller). Head dims of 4 or 8 whole vectors share each key's loads among the rows.
template <typename T, class D>
HWY_INLINE void ScoreRows(D d, const float* q, int dim, const T* const* kp, int valid, float scale,
                          int rows, float* w, int w_stride) {
#if !HWY_HAVE_SCALABLE
  constexpr int N = static_cast<int>(hn::MaxLanes(D()));
  const bool shared4 = SharedScoreRows(4) >= 1 && dim == 4 * N;
  const bool shared8 = SharedScoreRows(8) >= 1 && dim == 8 * N;
  if (shared4 || shared8) {
    for (int g0 = 0; g0 < valid; g0 += N) {
      const T* k[N];
      for (int j = 0; j < N; ++j) k[j] = g0 + j < valid ? kp[g0 + j] : kp[0];  // valid >= 1
      if constexpr (SharedScoreRows(4) >= 1) {
        if (shared4) ScoreRowsShared<4>(d, q, dim, k, scale, rows, w + g0, w_stride);
      }
      if constexpr (SharedScoreRows(8) >= 1) {
        if (shared8) ScoreRowsShared<8>(d, q, dim, k, scale, rows, w + g0, w_stride);
      }
    }
    return;
  }
#endif
  for (int r = 0; r < rows; ++r) Scores(d, q + r * dim, kp, valid, dim, scale, w + r * w_stride);
}

}  // namespace kiln::kernels::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // KILN_KERNELS_ATTENTION_SCORES_INL_H_
