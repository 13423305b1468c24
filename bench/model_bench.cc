// Single-stream prefill and decode speed of one model file, the way llama-bench measures it:
// prefill = one forward over P prompt tokens; decode = N forwards of one token each.
// Usage: model_bench MODEL [--prompt P] [--decode N] [--reps R] [--cores 0-1]
// Prints one JSON line per model with the median tok/s over R repetitions.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "kernels/ops.h"
#include "model/model.h"
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
  int prompt = 512, decode = 128, reps = 3;
  std::string cores;
};

Args Parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    auto next = [&] { return i + 1 < argc ? argv[++i] : ""; };
    if (!std::strcmp(argv[i], "--prompt")) a.prompt = std::atoi(next());
    else if (!std::strcmp(argv[i], "--decode")) a.decode = std::atoi(next());
    else if (!std::strcmp(argv[i], "--reps")) a.reps = std::atoi(next());
    else if (!std::strcmp(argv[i], "--cores")) a.cores = next();
    else a.model = argv[i];
  }
  return a;
}

}  // namespace

int main(int argc, char** argv) try {
  Args a = Parse(argc, argv);
  if (a.model.empty()) {
    std::fprintf(stderr, "usage: model_bench MODEL [--prompt P] [--decode N] [--reps R]\n");
    return 2;
  }
  auto model = kiln::Model::Load(a.model);
  const auto& c = model->config();
  std::vector<int> cores = a.cores.empty() ? kiln::AllowedCores() : kiln::ParseCoreSet(a.cores);
  kiln::ThreadPool pool(cores);
  kiln::PagedKvCache kv(c, 1, a.prompt + a.decode + 1);
  std::mt19937 rng(0);
  std::vector<int32_t> prompt(a.prompt);
  for (auto& t : prompt) t = static_cast<int32_t>(rng() % c.vocab_size);
  std::vector<float> logits(c.vocab_size);
  std::vector<double> prefill, decode;
  for (int r = 0; r < a.reps + 1; ++r) {  // first repetition warms caches and page tables
    auto t0 = Clock::now();
    model->ForwardSequence(prompt, 0, kv, pool, false, logits.data());
    auto t1 = Clock::now();
    int32_t tok = prompt.back();
    for (int i = 0; i < a.decode; ++i) {
      model->ForwardSequence({&tok, 1}, a.prompt + i, kv, pool, false, logits.data());
      tok = static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
    }
    auto t2 = Clock::now();
    if (r == 0) continue;
    prefill.push_back(a.prompt / Seconds(t0, t1));
    decode.push_back(a.decode / Seconds(t1, t2));
  }
  std::printf(
      "{\"model\": \"%s\", \"engine\": \"kiln\", \"target\": \"%s\", \"threads\": %zu, "
      "\"prompt\": %d, \"decode\": %d, \"prefill_tok_s\": %.1f, \"decode_tok_s\": %.1f}\n",
      a.model.c_str(), kiln::kernels::ActiveTargetName(), cores.size(), a.prompt, a.decode,
      Median(prefill), Median(decode));
  return 0;
} catch (const kiln::Error& e) {
  std::fprintf(stderr, "model_bench: %s\n", e.what());
  return 1;
}
