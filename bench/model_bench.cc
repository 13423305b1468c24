// Single-stream prefill and decode speed of one model file, the way llama-bench measures it:
// prefill = one forward over P prompt tokens; decode = N forwards of one token each.
// Usage: model_bench MODEL [--prompt P] [--decode N] [--reps R] [--cores 0-1] [--batch B]
//                    [--kv-cache-dtype auto|f32|f16|bf16]
// Prints one JSON line per model with the median tok/s over R repetitions. --batch B (> 1)
// measures batched decode instead: B sequences, each prefilled with the same P-token prompt,
// then N steps that decode one token of every sequence in one forward (continuous batching's
// steady state); decode_tok_s is then B * N / time.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "kernels/ops.h"
#include "model/model.h"
#include "model/paged_kv_cache.h"
#include "util/core_set.h"
#include "util/error.h"

namespace {

using Clock = std::chrono::steady_clock;

double Seconds(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

struct Args {
  std::string model;
  int prompt = 512, decode = 128, reps = 3, batch = 1;
  std::string cores;
  std::string kv_name = "auto";              // as kiln serve's --kv-cache-dtype
  kiln::DType kv_dtype = kiln::DType::kF32;  // resolved once the model is loaded
};

Args Parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    auto next = [&] { return i + 1 < argc ? argv[++i] : ""; };
    if (!std::strcmp(argv[i], "--prompt"))
      a.prompt = std::atoi(next());
    else if (!std::strcmp(argv[i], "--decode"))
      a.decode = std::atoi(next());
    else if (!std::strcmp(argv[i], "--reps"))
      a.reps = std::atoi(next());
    else if (!std::strcmp(argv[i], "--cores"))
      a.cores = next();
    else if (!std::strcmp(argv[i], "--batch"))
      a.batch = std::max(1, std::atoi(next()));
    else if (!std::strcmp(argv[i], "--kv-cache-dtype")) {
      a.kv_name = next();
    } else
      a.model = argv[i];
  }
  return a;
}

int32_t Argmax(const float* v, int64_t n) {
  return static_cast<int32_t>(kiln::kernels::ArgMax(v, n));
}

// Batched decode: median aggregate tok/s over reps (plus one warm-up), and the prefill tok/s
// of the B prompts (run one sequence at a time).
void BenchBatched(kiln::Model& model, const std::vector<int32_t>& prompt, const Args& a,
                  kiln::ThreadPool& pool, double* prefill_tok_s, double* decode_tok_s) {
  const auto& c = model.config();
  const int64_t b_count = a.batch, vocab = c.vocab_size;
  kiln::PagedKvCache kv(c, b_count, a.prompt + a.decode + 1, a.kv_dtype);
  std::vector<float> logits(b_count * vocab);
  std::vector<double> prefill, decode;
  for (int r = 0; r < a.reps + 1; ++r) {
    std::vector<int32_t> next(b_count);
    auto t0 = Clock::now();
    for (int64_t b = 0; b < b_count; ++b) {
      kiln::Batch batch;
      batch.tokens = prompt;
      batch.seqs.push_back({0, a.prompt, 0, {static_cast<int32_t>(b)}, true});
      model.Forward(batch, kv, pool, logits.data());
      next[b] = Argmax(logits.data(), vocab);
    }
    auto t1 = Clock::now();
    for (int i = 0; i < a.decode; ++i) {
      kiln::Batch batch;
      for (int64_t b = 0; b < b_count; ++b) {
        batch.tokens.push_back(next[b]);
        batch.seqs.push_back({b, 1, a.prompt + i, {static_cast<int32_t>(b)}, true});
      }
      model.Forward(batch, kv, pool, logits.data());
      for (int64_t b = 0; b < b_count; ++b) next[b] = Argmax(&logits[b * vocab], vocab);
    }
    auto t2 = Clock::now();
    if (r == 0) continue;
    prefill.push_back(static_cast<double>(a.prompt * b_count) / Seconds(t0, t1));
    decode.push_back(static_cast<double>(a.decode * b_count) / Seconds(t1, t2));
  }
  *prefill_tok_s = Median(prefill);
  *decode_tok_s = Median(decode);
}

}  // namespace

int main(int argc, char** argv) try {
  Args a = Parse(argc, argv);
  if (a.model.empty()) {
    std::fprintf(
        stderr,
        "usage: model_bench MODEL [--prompt P] [--decode N] [--reps R] [--cores C] [--batch B] "
        "[--kv-cache-dtype auto|f32|f16|bf16]\n");
    return 2;
  }
  auto model = kiln::Model::Load(a.model);
  const std::optional<kiln::DType> kv_dtype =
      kiln::ResolveKvCacheDType(a.kv_name, model->attention_weight_dtype());
  KILN_CHECK(kv_dtype.has_value(), "--kv-cache-dtype must be auto, f32, f16 or bf16, not '",
             a.kv_name, "'");
  a.kv_dtype = *kv_dtype;
  const auto& c = model->config();
  std::vector<int> cores = a.cores.empty() ? kiln::AllowedCores() : kiln::ParseCoreSet(a.cores);
  kiln::ThreadPool pool(cores);
  std::mt19937 rng(0);
  std::vector<int32_t> prompt(a.prompt);
  for (auto& t : prompt) t = static_cast<int32_t>(rng() % c.vocab_size);
  double prefill_tok_s = 0, decode_tok_s = 0;
  if (a.batch > 1) {
    BenchBatched(*model, prompt, a, pool, &prefill_tok_s, &decode_tok_s);
  } else {
    kiln::PagedKvCache kv(c, 1, a.prompt + a.decode + 1, a.kv_dtype);
    std::vector<float> logits(c.vocab_size);
    std::vector<double> prefill, decode;
    for (int r = 0; r < a.reps + 1; ++r) {  // first repetition warms caches and page tables
      auto t0 = Clock::now();
      model->ForwardSequence(prompt, 0, kv, pool, false, logits.data());
      auto t1 = Clock::now();
      int32_t tok = prompt.back();
      for (int i = 0; i < a.decode; ++i) {
        model->ForwardSequence({&tok, 1}, a.prompt + i, kv, pool, false, logits.data());
        tok = Argmax(logits.data(), c.vocab_size);
      }
      auto t2 = Clock::now();
      if (r == 0) continue;
      prefill.push_back(a.prompt / Seconds(t0, t1));
      decode.push_back(a.decode / Seconds(t1, t2));
    }
    prefill_tok_s = Median(prefill);
    decode_tok_s = Median(decode);
  }
  std::printf(
      "{\"model\": \"%s\", \"engine\": \"kiln\", \"target\": \"%s\", \"threads\": %zu, "
      "\"prompt\": %d, \"decode\": %d, \"batch\": %d, \"kv_cache_dtype\": \"%s\", "
      "\"prefill_tok_s\": %.1f, \"decode_tok_s\": %.1f}\n",
      a.model.c_str(), kiln::kernels::ActiveTargetName(), cores.size(), a.prompt, a.decode, a.batch,
      std::string(kiln::GetDTypeInfo(a.kv_dtype).name).c_str(), prefill_tok_s, decode_tok_s);
  return 0;
} catch (const kiln::Error& e) {
  std::fprintf(stderr, "model_bench: %s\n", e.what());
  return 1;
}
