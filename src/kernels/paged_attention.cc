// Highway implementation of PagedAttention, one dispatch per call.
#include "kernels/paged_attention.h"

#include <algorithm>
#include <cmath>
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

#include "kernels/paged_attention-inl.h"

HWY_BEFORE_NAMESPACE();
namespace kiln::kernels {
namespace HWY_NAMESPACE {

void RunTasks(const float* q, const int64_t* pos, const PagedKv& kv, const AttentionShape& s,
              const attn::Task* tasks, int64_t n_tasks, float* out) {
  for (int64_t i = 0; i < n_tasks; ++i) {
    if (kv.dtype == DType::kBF16) {
      AttendTask<hwy::bfloat16_t>(q, pos, kv, s, tasks[i], out);
    } else if (kv.dtype == DType::kF16) {
      AttendTask<hwy::float16_t>(q, pos, kv, s, tasks[i], out);
    } else {
      AttendTask<float>(q, pos, kv, s, tasks[i], out);
    }
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace kiln::kernels
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace kiln::kernels {

HWY_EXPORT(RunTasks);

namespace {

void Run(const float* q, const int64_t* pos, const PagedKv& kv, const AttentionShape& shape,
         const attn::Task* tasks, int64_t n_tasks, float* out) {
  HWY_DYNAMIC_DISPATCH(RunTasks)(q, pos, kv, shape, tasks, n_tasks, out);
}

// Query tokens per prefill task: small enough for a balanced split of a chunk over the pool,
// large enough that the K/V block read into L1 serves many rows.
constexpr int64_t kQueryBlock = 16;
// Below this many (row, key) pairs (~10 ns each) a call runs on the calling thread: handing
// work to the pool costs about a microsecond while its workers spin. Not much more: a worker
// left idle longer than its spin (30 us) goes to sleep, and waking it for the next matmul costs
// more than the attention saved (SmolLM2 decode at context 512 lost a quarter of its speed to
// that with 8192 here).
constexpr int64_t kSerialWork = 1024;

}  // namespace

void PagedAttention(const float* q, const int64_t* pos, std::span<const PagedSeq> seqs,
                    const PagedKv& kv, const AttentionShape& shape, float* out, ThreadPool& pool) {
  KILN_CHECK(kv.dtype == DType::kF32 || kv.dtype == DType::kF16 || kv.dtype == DType::kBF16,
             "PagedAttention: KV elements must be f32, f16 or bf16");
  KILN_CHECK(shape.n_kv_heads > 0 && shape.n_heads % shape.n_kv_heads == 0,
             "PagedAttention: n_heads must be a multiple of n_kv_heads");
  // Tasks (seq, query block, kv head) with their cumulative cost (rows x keys) for a balanced
  // contiguous split; the caller's scratch keeps its capacity between calls.
  thread_local std::vector<attn::Task> tasks;
  thread_local std::vector<int64_t> cost_end;
  tasks.clear();
  cost_end.clear();
  const int group = shape.n_heads / shape.n_kv_heads;
  int64_t total = 0;
  for (const PagedSeq& seq : seqs) {
    const int64_t end = seq.token_begin + seq.token_count;
    for (int64_t b = seq.token_begin; b < end; b += kQueryBlock) {
      const int64_t e = std::min(end, b + kQueryBlock);
      int64_t keys = 0;
      for (int64_t t = b; t < e; ++t) keys = std::max(keys, pos[t] + 1);
      for (int h = 0; h < shape.n_kv_heads; ++h) {
        tasks.push_back(attn::Task{seq.block_table, b, e, h});
        total += (e - b) * group * keys;
        cost_end.push_back(total);
      }
    }
  }
  const int64_t n_tasks = static_cast<int64_t>(tasks.size());
  if (n_tasks == 0) return;
  if (pool.size() == 1 || n_tasks == 1 || total < kSerialWork) {
    Run(q, pos, kv, shape, tasks.data(), n_tasks, out);
    return;
  }
  // Worker w takes the tasks whose cost midpoint falls in [w, w + 1) * total / workers (the pool
  // size only moves task boundaries, never a row's arithmetic).
  struct Job {
    const float* q;
    const int64_t* pos;
    const PagedKv* kv;
    const AttentionShape* shape;
    float* out;
    const attn::Task* tasks;
    const int64_t* cost_end;
    int64_t n_tasks, total;
  } job{q, pos, &kv, &shape, out, tasks.data(), cost_end.data(), n_tasks, total};
  pool.RunOnAll([&job](int w, int nw) {
    auto first_at = [&](int64_t bound) {  // first task with 2 * midpoint >= 2 * bound
      int64_t i = 0;
      while (i < job.n_tasks && (i ? job.cost_end[i - 1] : 0) + job.cost_end[i] < 2 * bound) ++i;
      return i;
    };
    const int64_t begin = first_at(job.total * w / nw);
    const int64_t end = w + 1 == nw ? job.n_tasks : first_at(job.total * (w + 1) / nw);
    if (begin < end) {
      Run(job.q, job.pos, *job.kv, *job.shape, job.tasks + begin, end - begin, job.out);
    }
  });
}

void PagedAttention(const float* q, const int64_t* pos, int64_t n_tokens, const PagedKv& kv,
                    const AttentionShape& shape, float* out, ThreadPool& pool) {
  const PagedSeq seq{kv.block_table, 0, n_tokens};
  PagedAttention(q, pos, std::span<const PagedSeq>(&seq, 1), kv, shape, out, pool);
}

namespace scalar {
namespace {

// Element `i` of a K/V pool of `dtype`, as f32.
float KvAt(const void* base, DType dtype, int64_t i) {
  if (dtype == DType::kBF16) return Bf16ToF32(static_cast<const uint16_t*>(base)[i]);
  if (dtype == DType::kF16) return F16ToF32(static_cast<const uint16_t*>(base)[i]);
  return static_cast<const float*>(base)[i];
}

}  // namespace

void PagedAttention(const float* q, const int64_t* pos, int64_t n_tokens, const PagedKv& kv,
                    const AttentionShape& s, float* out) {
  const int group = s.n_heads / s.n_kv_heads;
  std::vector<double> w;
  for (int64_t t = 0; t < n_tokens; ++t) {
    for (int h = 0; h < s.n_heads; ++h) {
      const float* qh = q + (t * s.n_heads + h) * s.head_dim;
      float* oh = out + (t * s.n_heads + h) * s.head_dim;
      auto row = [&](int64_t p) { return KvRowOffset(kv, kv.block_table, s, p, h / group); };
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
