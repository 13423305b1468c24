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

#include "hwy/cache_control.h"
#include "hwy/contrib/math/math-inl.h"
#include "hwy/highway.h"
#include "kernels/attention_scores-inl.h"
#include "kernels/fdot-inl.h"
#include "kernels/paged_attention.h"
#include "util/half.h"

HWY_BEFORE_NAMESPACE();
namespace kiln::kernels::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;
using attn::kKeyBlock;

// V rows accumulate into 4 vectors per row, beside 4 V vectors and one weight per row.
inline constexpr int kSharedVRows = kVectorRegisters >= 32 ? 4 : 2;

// One row's online-softmax step over keys [0, valid) of a key block, w [kKeyBlock] holding their
// scores (ScoreRows): w gets the weights exp(s_j - m_new) (0 for j >= valid, never computed from
// stale cache rows), *m the new running max, lsum [Lanes(d)] the rescaled running sums; returns
// c = exp(m_old - m_new), the factor for the row's output accumulator (exactly 1 when the max
// holds).
template <class D>
HWY_INLINE float SoftmaxStep(D d, int valid, bool first, float* m, float* lsum, float* w) {
  const int lanes = static_cast<int>(hn::Lanes(d));
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

// acc_r [dim] = acc_r * c_r + sum_{j < valid} w_r[j] V_j for kRows (1 .. kSharedVRows) rows of
// one token (acc_r = acc + r * dim, w_r = w + r * kKeyBlock), sharing the V loads and giving
// 4 * kRows independent FMA chains. Each element's chain runs over j ascending, the same ops
// whichever rows share the call.
template <int kRows, typename T, class D>
HWY_NOINLINE void AccumulateV(D d, const T* const* vp, int valid, int dim, const float* w,
                              const float* c, float* acc) {
  const int lanes = static_cast<int>(hn::Lanes(d));
  bool rescale[kRows];
  for (int r = 0; r < kRows; ++r) rescale[r] = c[r] != 1.0f;
  int i = 0;
  for (; i + 4 * lanes <= dim; i += 4 * lanes) {
    hn::Vec<D> a[kRows][4];
    for (int r = 0; r < kRows; ++r) {
      for (int u = 0; u < 4; ++u) {
        a[r][u] = hn::LoadU(d, acc + r * dim + i + u * lanes);
        if (rescale[r]) a[r][u] = hn::Mul(a[r][u], hn::Set(d, c[r]));
      }
    }
    for (int j = 0; j < valid; ++j) {
      const T* v = vp[j] + i;
      hn::Vec<D> vj[4];
      for (int u = 0; u < 4; ++u) vj[u] = LoadWeights(d, v + u * lanes);
      for (int r = 0; r < kRows; ++r) {
        const auto x = hn::Set(d, w[r * kKeyBlock + j]);
        for (int u = 0; u < 4; ++u) a[r][u] = hn::MulAdd(x, vj[u], a[r][u]);
      }
    }
    for (int r = 0; r < kRows; ++r) {
      for (int u = 0; u < 4; ++u) hn::StoreU(a[r][u], d, acc + r * dim + i + u * lanes);
    }
  }
  for (; i + lanes <= dim; i += lanes) {
    hn::Vec<D> a[kRows];
    for (int r = 0; r < kRows; ++r) {
      a[r] = hn::LoadU(d, acc + r * dim + i);
      if (rescale[r]) a[r] = hn::Mul(a[r], hn::Set(d, c[r]));
    }
    for (int j = 0; j < valid; ++j) {
      const auto v = LoadWeights(d, vp[j] + i);
      for (int r = 0; r < kRows; ++r) a[r] = hn::MulAdd(hn::Set(d, w[r * kKeyBlock + j]), v, a[r]);
    }
    for (int r = 0; r < kRows; ++r) hn::StoreU(a[r], d, acc + r * dim + i);
  }
  for (; i < dim; ++i) {
    for (int r = 0; r < kRows; ++r) {
      float a = rescale[r] ? acc[r * dim + i] * c[r] : acc[r * dim + i];
      for (int j = 0; j < valid; ++j) a += w[r * kKeyBlock + j] * WeightToF32(vp[j] + i);
      acc[r * dim + i] = a;
    }
  }
}

// AccumulateV over `rows` rows, kSharedVRows at a time.
template <typename T, class D>
HWY_INLINE void AccumulateRows(D d, const T* const* vp, int valid, int dim, int rows,
                               const float* w, const float* c, float* acc) {
  int r = 0;
  for (; r + kSharedVRows <= rows; r += kSharedVRows) {
    AccumulateV<kSharedVRows>(d, vp, valid, dim, w + r * kKeyBlock, c + r, acc + r * dim);
  }
  const int left = rows - r;
  w += r * kKeyBlock, c += r, acc += r * dim;
  if constexpr (kSharedVRows > 3) {
    if (left == 3) return AccumulateV<3>(d, vp, valid, dim, w, c, acc);
  }
  if constexpr (kSharedVRows > 2) {
    if (left == 2) return AccumulateV<2>(d, vp, valid, dim, w, c, acc);
  }
  if (left == 1) AccumulateV<1>(d, vp, valid, dim, w, c, acc);
}

// One key block (positions p0 .. p0 + kKeyBlock - 1, rows kp / vp) for every row of the task
// that reaches it: the scores of the token's rows, their online-softmax steps, then the V
// accumulation, the rows sharing the K and V loads.
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
    ScoreRows(d, qt, dim, kp, valid, s.scale, group, w, kKeyBlock);
    for (int g = 0; g < group; ++g) {
      c[g] = SoftmaxStep(d, valid, p0 == 0, &m[r0 + g], &lsum[(r0 + g) * lanes], &w[g * kKeyBlock]);
    }
    AccumulateRows(d, vp, valid, dim, group, w, c, &acc[r0 * dim]);
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

// The K / V rows (one kv head's slice) of key block positions p0 .. p0 + n - 1, n =
// min(kKeyBlock, last + 1 - p0) (0 past the end), without a division per key when key blocks
// lie inside cache blocks.
struct KeyBlockRows {
  const PagedKv& kv;
  const AttentionShape& s;
  const int32_t* block_table;
  int32_t kv_head;
  int64_t last;
  int64_t pos_stride = KvPositionStride(kv, s);

  template <typename T>
  int operator()(int64_t p0, const T* k_base, const T* v_base, const T** kp, const T** vp) const {
    const int n = static_cast<int>(std::clamp<int64_t>(last + 1 - p0, 0, kKeyBlock));
    if (n == 0) return 0;
    if (kv.block_size % kKeyBlock == 0) {  // p0 .. p0 + n - 1 in one cache block
      const int64_t row0 = KvRowOffset(kv, block_table, s, p0, kv_head);
      for (int j = 0; j < n; ++j)
        kp[j] = k_base + row0 + j * pos_stride, vp[j] = v_base + row0 + j * pos_stride;
      return n;
    }
    for (int j = 0; j < n; ++j) {
      const int64_t row = KvRowOffset(kv, block_table, s, p0 + j, kv_head);
      kp[j] = k_base + row;
      vp[j] = v_base + row;
    }
    return n;
  }
};

// Prefetches the cache lines of row[0 .. dim).
template <typename T>
HWY_INLINE void PrefetchRow(const T* row, int dim) {
  const char* begin = reinterpret_cast<const char*>(row);
  const char* end = begin + static_cast<size_t>(dim) * sizeof(T);
  for (const char* p = begin; p < end; p += 64) hwy::Prefetch(p);
  hwy::Prefetch(end - 1);  // the last line, when the row does not start on a line
}

// Runs one task: rows r = (t - token_begin) * group + g for query head kv_head * group + g.
template <typename T>
void AttendTask(const float* q, const int64_t* pos, const PagedKv& kv, const AttentionShape& s,
                const attn::Task& task, float* out) {
  const hn::CappedTag<float, kKeyBlock> d;  // a key block is a whole number of vectors
  const int lanes = static_cast<int>(hn::Lanes(d));
  const int dim = s.head_dim, group = s.n_heads / s.n_kv_heads;
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
  const T* next_kp[kKeyBlock];
  const T* next_vp[kKeyBlock];
  const KeyBlockRows rows_of{kv, s, task.block_table, task.kv_head, last};
  for (int64_t p0 = 0; p0 <= last; p0 += kKeyBlock) {
    const int nk = rows_of(p0, k_base, v_base, kp, vp);
    // The next key block's K / V rows come from DRAM during a decode step (the weights streamed
    // since the last step evicted them) and from another block of the pool: ask for them a
    // block ahead.
    const int next = rows_of(p0 + kKeyBlock, k_base, v_base, next_kp, next_vp);
    for (int j = 0; j < next; ++j) PrefetchRow(next_kp[j], dim), PrefetchRow(next_vp[j], dim);
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
